//! `switchboard serve --stdio | --http [ADDR]`: the gateway (crate `switchboard-gateway`).
//!
//! Over stdio, stdout is the protocol: everything else goes to stderr. Over HTTP, stdout gets
//! one line, `listening on http://ADDR/mcp`, once connections are accepted.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use switchboard_gateway::{
    DEFAULT_ORIGINS, Gateway, HttpGateway, HttpOptions, MCP_PATH, OAuthOptions, ResourceServer,
    SessionLimits, ToolFilter,
};

use crate::args::ServeArgs;
use crate::context::Context;

/// The token file, under the state folder.
const TOKEN_FILE: &str = "gateway-token";

/// How long the servers' handshakes wait for the stdio client's `initialize` (it comes at
/// once; a gateway started by hand with no client connects its servers after this).
const CLIENT_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

pub(crate) fn run(ctx: &Context, args: ServeArgs) -> anyhow::Result<ExitCode> {
    // clap's `requires = "http"` is not enforced here (the flags sit in the `transport`
    // group): the HTTP-only flags are checked by hand, as a usage error.
    if args.http.is_none() {
        let only_http = [
            ("--no-fast-path", args.no_fast_path),
            ("--cluster-key-file", args.cluster_key_file.is_some()),
        ];
        if let Some((flag, _)) = only_http.iter().find(|(_, given)| *given) {
            use clap::CommandFactory as _;
            crate::args::Cli::command()
                .error(
                    clap::error::ErrorKind::MissingRequiredArgument,
                    format!("{flag} needs --http"),
                )
                .exit();
        }
    }
    if args.http.is_none() && args.audit_log.as_deref() == Some("-") {
        // Over stdio, stdout is the protocol.
        use clap::CommandFactory as _;
        crate::args::Cli::command()
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                "--audit-log - (stdout) needs --http: over stdio, stdout is the protocol",
            )
            .exit();
    }
    let addr = args.http.as_deref().map(parse_addr).transpose()?;
    if let Some(addr) = addr
        && !addr.ip().is_loopback()
        && !args.allow_remote
    {
        // Before any server starts or a token is made.
        return Err(switchboard_gateway::HttpError::NotLoopback(addr).into());
    }
    // Read before any server starts: a bad token file or tool rule fails at once.
    let given = match addr {
        Some(_) => given_token(ctx, &args)?,
        None => None,
    };
    // So is a bad cluster key file.
    let cluster = args
        .cluster_key_file
        .as_deref()
        .map(switchboard_gateway::Cluster::from_key_file)
        .transpose()?
        .map(std::sync::Arc::new);
    if let Some(addr) = addr
        && cluster.is_some()
        && addr.ip().is_unspecified()
        && args.advertise_addr.is_none()
    {
        // Another replica could not reach this one at 0.0.0.0: its rounds would be lost.
        bail!(
            "--http {addr} with --cluster-key-file needs --advertise-addr HOST:PORT: the address \
             other replicas reach this one at"
        );
    }
    if let (Some(cluster), Some(advertised)) = (&cluster, &args.advertise_addr) {
        let has_port = advertised
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
        if !has_port {
            bail!("--advertise-addr wants HOST:PORT, not {advertised:?}");
        }
        cluster.set_advertise(advertised.clone());
    }
    // So is a bad rate limit.
    let mut limits = switchboard_gateway::RateLimits::parse(&args.rate_limits)
        .map_err(|e| anyhow::anyhow!("--rate-limit {e}"))?;
    let mut filter = flag_rules(&args)?;
    // The flags' rules alone: a reload joins them with the file's as it is then.
    let rules = filter.clone();
    let oauth = match (&args.oauth_issuer, &args.oauth_audience) {
        (Some(issuer), Some(audience)) => Some(ResourceServer::new(
            OAuthOptions {
                issuer: issuer.clone(),
                audience: audience.clone(),
            },
            Vec::new(),
        )?),
        _ => None,
    };
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = args.workers {
        runtime.worker_threads(usize::from(workers));
    }
    let runtime = runtime.enable_all().build()?;
    runtime.block_on(async {
        // Before any server starts: a bad endpoint fails at once.
        let traces = args
            .otlp_endpoint
            .as_deref()
            .map(switchboard_gateway::Traces::otlp)
            .transpose()?;
        // Before any server starts: a bad or unreachable store fails at once, naming it.
        let store = match args.store.as_deref() {
            Some(url) => Some(
                switchboard::shared::SharedStore::connect(url)
                    .await
                    .context("--store")?,
            ),
            None => None,
        };
        // The configuration's errors are on stderr; the gateway serves what can run.
        // A gateway runs for long: a remote server down at its start is tried again.
        let mut builder = crate::start::builder(ctx, args.servers.clone())?
            .builder
            .one_shot(false);
        if let Some(store) = store {
            // The replicas take from the same buckets.
            limits.share(store.clone());
            builder = builder.store(store);
        }
        if let Some(cluster) = &cluster {
            // Callers' tokens (per-user credentials) are sealed under the cluster key at rest.
            builder = builder.user_token_seal(cluster.clone());
        }
        // Every server is waited for before a client is served: `--prefix never` refuses
        // clashing names first, `--wait-for-servers` says so.
        let settles_first =
            args.prefix == switchboard_gateway::Prefix::Never || args.wait_for_servers;
        let awaits_client = addr.is_none() && !settles_first;
        if awaits_client {
            // The one client's `initialize` comes at once: the servers' handshakes wait for
            // it, so they are told what it answers and none has to reconnect to learn it.
            builder = builder.await_offer(CLIENT_WAIT);
        }
        let host = builder
            .interaction(switchboard_gateway::upstream_interaction())
            // Nothing until a client says what it answers (`Gateway::follow_clients`).
            .offered(switchboard::interaction::Offered::NOTHING)
            .gateway_ask(args.ask.into())
            // An HTTP client may be on another machine: a file written here means nothing
            // there, so audio and blobs stay in the results.
            .binaries_inline(addr.is_some())
            .start()?;
        if settles_first {
            // `--prefix never` serves the servers' own names: two servers offering one is
            // refused before any client sees either, so every server is waited for first (as
            // `--wait-for-servers` asks).
            if let Err(e) = crate::start::settle(&host).await {
                host.shutdown().await;
                return Err(e);
            }
            let collisions = switchboard_gateway::name_collisions(&host, args.prefix).await;
            if !collisions.is_empty() {
                host.shutdown().await;
                // One line of what clashes, then the way out once.
                let all: Vec<String> = collisions.iter().map(ToString::to_string).collect();
                bail!(
                    "--prefix never needs unique names: {}\n  hint: --prefix conditional keeps \
                     the unique ones bare and prefixes these; --prefix always prefixes all",
                    all.join("; ")
                );
            }
        } else {
            // Served at once: a slow server holds no client up, but a `required` one is waited
            // for (the user said the gateway needs it), and one that fails stops the start.
            // What else fails is reported when it settles.
            let required = host
                .servers()
                .iter()
                .any(|(name, _)| host.server_config(name).is_some_and(|c| c.required));
            if awaits_client && required {
                // Its handshake comes before the client is served: no wait for the client.
                host.set_offered(Some(switchboard::interaction::Offered::NOTHING));
            }
            let bound = host.settle_bound();
            if let Err(e) = host.wait_required(bound).await {
                crate::start::report_failures(&host);
                host.shutdown().await;
                return Err(e.into());
            }
            let reporting = host.clone();
            tokio::spawn(async move {
                if let Err(e) = crate::start::settle(&reporting).await {
                    eprintln!("warning: {e:#}");
                }
            });
        }
        // The user file's rules join the flags'; one that cannot be read stops the gateway
        // (a deny rule silently dropped would serve what it hides).
        if let Err(e) =
            config_rules(&host, &mut filter).and_then(|()| config_limits(&host, &mut limits))
        {
            host.shutdown().await;
            return Err(e);
        }
        let oauth = oauth.map(|mut oauth| {
            oauth.set_scopes(filter.scopes());
            std::sync::Arc::new(oauth)
        });
        let gateway = Gateway::with_options(
            host.clone(),
            filter,
            args.tool_search.unwrap_or_default(),
            args.prefix,
        );
        if let Some(cluster) = cluster {
            // Before the audit log: a replica's lines name it.
            gateway.set_cluster(cluster);
        }
        if let Some(url) = &args.public_url {
            gateway.set_public_url(url);
        }
        if let Some(log) = &args.audit_log {
            let options = switchboard_gateway::AuditOptions {
                target: match log.as_str() {
                    "-" => switchboard_gateway::AuditTarget::Stdout,
                    path => switchboard_gateway::AuditTarget::File(path.into()),
                },
                arguments: args.audit_arguments,
                max_bytes: args.audit_max_bytes,
            };
            if let Err(e) = gateway.set_audit(options) {
                host.shutdown().await;
                return Err(e.into());
            }
        }
        if addr.is_some() && ctx.profile.is_none() {
            // Every profile on its own path (`/mcp/<profile>`), over this one host.
            let profiles = host.current_config().profiles();
            for issue in &profiles.issues {
                eprintln!("switchboard: {issue}");
            }
            let views = profiles
                .profiles
                .values()
                .filter_map(
                    |profile| match switchboard_gateway::ProfileView::new(profile) {
                        Ok(view) => Some(view),
                        Err(e) => {
                            eprintln!("switchboard: warning: {e}");
                            None
                        }
                    },
                )
                .collect();
            gateway.set_profiles(views);
        }
        gateway.set_rate_limits(limits);
        gateway.set_fast_path(!args.no_fast_path);
        let reporting = host.clone();
        gateway.follow_clients(move |reoffer| {
            eprintln!("switchboard: {}", reoffer_line(&reporting, reoffer));
        });
        gateway.set_list_wait(
            std::time::Duration::try_from_secs_f64(args.list_wait)
                .context("--list-wait: a number of seconds")?,
        );
        // 64 is the host's own cut: nothing more to do.
        let budget = usize::from(args.max_name_length);
        gateway.set_name_budget((budget < switchboard::MAX_QUALIFIED_NAME).then_some(budget));
        let gateway_for_reload = gateway.clone();
        if let Some(traces) = &traces {
            gateway.set_traces(traces.clone());
        }
        let flushing = gateway.clone();
        let served = async {
            match addr {
                Some(addr) => serve_http(gateway, addr, &args, given, oauth).await,
                None => switchboard_gateway::serve_stdio(gateway)
                    .await
                    .context("serving on stdio"),
            }
        };
        // Listening before anything is served: a SIGHUP from then on reloads, never kills.
        let hangups = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
        let reloading = tokio::spawn(reload_on_hangup(gateway_for_reload, hangups, rules));
        // The signal handlers are set: a SIGHUP to this pid reloads from now on.
        let pid_file = match &args.pid_file {
            Some(path) => match write_pid_file(path) {
                Ok(()) => Some(path.clone()),
                Err(e) => {
                    reloading.abort();
                    host.shutdown().await;
                    return Err(e);
                }
            },
            None => None,
        };
        let outcome = tokio::select! {
            outcome = served => outcome,
            _ = crate::context::interrupted() => Ok(()),
        };
        reloading.abort();
        // The last requests' lines are written out before the process ends.
        flushing.flush_audit(std::time::Duration::from_secs(2));
        if let Some(traces) = traces {
            traces.shutdown();
        }
        host.shutdown().await;
        if let Some(path) = pid_file {
            let _ = std::fs::remove_file(path);
        }
        outcome.map(|()| ExitCode::SUCCESS)
    })
}

/// The line that says why upstream servers reconnect: what the gateway's clients can answer
/// changed (issue 41), and which of them restart.
fn reoffer_line(host: &switchboard::host::Host, reoffer: &switchboard_gateway::Reoffer) -> String {
    let restarted: Vec<&str> = reoffer
        .servers
        .iter()
        .filter(|name| {
            host.server_config(name)
                .is_some_and(|c| matches!(c.transport, switchboard::config::Transport::Stdio(_)))
        })
        .map(String::as_str)
        .collect();
    let restart = if restarted.is_empty() {
        String::new()
    } else {
        format!(
            "; the stdio servers among them restart: {}",
            restarted.join(", ")
        )
    };
    format!(
        "the gateway's clients can answer {}: reconnecting {} so that they offer only that, \
         each once its requests in flight have ended{restart}",
        reoffer.offered,
        reoffer.servers.join(", ")
    )
}

/// Writes this process's id and a newline to `path`, replacing it whole (a reader never sees
/// half a number).
fn write_pid_file(path: &std::path::Path) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => std::path::Path::new("."),
    };
    let mut file = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("--pid-file {}: cannot write in its folder", path.display()))?;
    use std::io::Write as _;
    writeln!(file, "{}", std::process::id())
        .and_then(|()| file.flush())
        .with_context(|| format!("--pid-file {}", path.display()))?;
    file.persist(path)
        .map_err(|e| anyhow::anyhow!("--pid-file {}: {}", path.display(), e.error))?;
    Ok(())
}

/// On each SIGHUP, reads the configuration again and applies its servers (see
/// [`switchboard::host::Host::reload`]) and its tool rules (`flags` joined with the user
/// file's `gateway` section; rules that do not parse leave the old ones in place); what
/// changed and the new problems go to stderr.
async fn reload_on_hangup(
    gateway: Gateway,
    hangups: Option<tokio::signal::unix::Signal>,
    flags: ToolFilter,
) {
    let Some(mut hangups) = hangups else {
        return;
    };
    let host = gateway.host().clone();
    while hangups.recv().await.is_some() {
        let reloaded = host.reload().await;
        let mut rules = flags.clone();
        match config_rules(&host, &mut rules) {
            Ok(()) => gateway.set_filter(rules),
            Err(e) => eprintln!("switchboard: the tool rules were kept as they were: {e:#}"),
        }
        match reloaded {
            Ok((reloaded, issues)) => {
                for issue in &issues {
                    eprintln!("switchboard: {issue}");
                }
                let part = |what: &str, names: &[String]| {
                    (!names.is_empty()).then(|| format!("{what} {}", names.join(", ")))
                };
                let parts: Vec<String> = [
                    part("added", &reloaded.added),
                    part("changed", &reloaded.changed),
                    part("removed", &reloaded.removed),
                ]
                .into_iter()
                .flatten()
                .collect();
                if parts.is_empty() {
                    eprintln!("switchboard: reloaded the configuration: no server changed");
                } else {
                    eprintln!(
                        "switchboard: reloaded the configuration: {}",
                        parts.join("; ")
                    );
                }
            }
            Err(e) => eprintln!(
                "switchboard: cannot reload: {}",
                switchboard::error_chain(&e)
            ),
        }
    }
}

/// The bearer token the user gave, and where it came from: `--token`, `--token-file` (its
/// first line), else `SWITCHBOARD_GATEWAY_TOKEN`. None: the stored one is used.
fn given_token(ctx: &Context, args: &ServeArgs) -> anyhow::Result<Option<String>> {
    let (token, from) = if let Some(token) = &args.token {
        (token.clone(), "--token".to_owned())
    } else if let Some(file) = &args.token_file {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("--token-file {}: cannot read it", file.display()))?;
        let first = text.lines().next().unwrap_or_default().to_owned();
        (first, format!("--token-file {}", file.display()))
    } else if let Some(token) = ctx
        .env
        .get(switchboard::env_vars::EnvVars::SWITCHBOARD_GATEWAY_TOKEN)
    {
        (
            token.to_owned(),
            switchboard::env_vars::EnvVars::SWITCHBOARD_GATEWAY_TOKEN.to_owned(),
        )
    } else {
        return Ok(None);
    };
    if token.trim().is_empty() {
        bail!("{from}: the token is empty");
    }
    if let Some(rule) = switchboard_gateway::weak_token(token.trim()) {
        bail!(
            "{from}: the token is too weak: {rule}\n  hint: `openssl rand -hex 32` makes a strong \
             one; without a token the gateway makes one and keeps it in the state folder"
        );
    }
    Ok(Some(token.trim().to_owned()))
}

async fn serve_http(
    gateway: Gateway,
    addr: SocketAddr,
    args: &ServeArgs,
    given: Option<String>,
    oauth: Option<std::sync::Arc<ResourceServer>>,
) -> anyhow::Result<()> {
    if let Some(oauth) = &oauth {
        // A check at start: a wrong issuer is told now, not at the first client.
        match oauth.refresh().await {
            Ok(keys) => eprintln!(
                "switchboard: OAuth access tokens of {} are let in ({keys} signing keys)",
                switchboard::redact_url(&oauth.options().issuer)
            ),
            Err(e) => eprintln!("switchboard: warning: {e} (tried again when a token comes)"),
        }
    }
    let token = match given {
        Some(token) => token,
        // OAuth only: no static token.
        None if oauth.is_some() => String::new(),
        None => {
            let path = gateway.host().config().paths.state_dir.join(TOKEN_FILE);
            let weak = switchboard_gateway::weak_token_file(&path);
            let (token, created) = switchboard_gateway::load_or_create_token(&path)?;
            if let Some(reason) = weak {
                eprintln!(
                    "switchboard: replaced the gateway's token file {}: {reason}",
                    path.display()
                );
            }
            if created {
                eprintln!(
                    "switchboard: a new bearer token for the gateway: {token}\n  (stored owner-only in {}; clients send `Authorization: Bearer <token>`)",
                    path.display()
                );
            } else {
                eprintln!(
                    "switchboard: the gateway's bearer token is in {}",
                    path.display()
                );
            }
            token
        }
    };
    let options = HttpOptions {
        token,
        oauth,
        allowed_origins: DEFAULT_ORIGINS
            .iter()
            .map(|s| (*s).to_owned())
            .chain(args.allow_origins.iter().cloned())
            .collect(),
        allow_remote: args.allow_remote,
        sessions: SessionLimits {
            max_sessions: args.max_sessions as usize,
            max_per_token: args.max_sessions_per_token as usize,
            idle: std::time::Duration::from_secs(args.session_idle),
        },
    };
    let profiles: Vec<String> = gateway
        .profiles()
        .iter()
        .map(|view| view.name().to_owned())
        .collect();
    let server = HttpGateway::bind(gateway, addr, options).await?;
    let bound = server.local_addr()?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening on http://{bound}{MCP_PATH}")?;
    stdout.flush()?;
    drop(stdout);
    for profile in profiles {
        eprintln!("switchboard: profile `{profile}` at http://{bound}{MCP_PATH}/{profile}");
    }
    server.run().await?;
    Ok(())
}

/// The tool rules of `--allow-tool` / `--deny-tool`.
fn flag_rules(args: &ServeArgs) -> anyhow::Result<ToolFilter> {
    const NONE: [&str; 0] = [];
    let mut filter = ToolFilter::parse(&args.allow_tools, NONE)
        .map_err(|e| anyhow::anyhow!("--allow-tool {e}"))?;
    filter.extend(
        ToolFilter::parse(NONE, &args.deny_tools)
            .map_err(|e| anyhow::anyhow!("--deny-tool {e}"))?,
    );
    Ok(filter)
}

/// Adds the user file's `gateway.allowTools` / `gateway.denyTools` to `filter`; its warnings
/// go to stderr, an error (naming the file, line and field) stops the gateway.
fn config_rules(host: &switchboard::host::Host, filter: &mut ToolFilter) -> anyhow::Result<()> {
    const NONE: [&str; 0] = [];
    let settings = host.current_config().gateway_settings();
    for issue in &settings.issues {
        if issue.is_error() {
            bail!("{issue}");
        }
        eprintln!("switchboard: {issue}");
    }
    for rule in &settings.tool_rules {
        let parsed = if rule.deny {
            ToolFilter::parse(NONE, [&rule.rule])
        } else {
            ToolFilter::parse([&rule.rule], NONE)
        };
        filter.extend(parsed.map_err(|e| anyhow::anyhow!("{}", rule.issue(e)))?);
    }
    Ok(())
}

/// Adds the user file's `gateway.rateLimits` to `limits` (read at start; a reload keeps the
/// limits the gateway started with). One that does not parse stops the gateway, naming its
/// file, line and field (the section's other problems are `config_rules`'s to report).
fn config_limits(
    host: &switchboard::host::Host,
    limits: &mut switchboard_gateway::RateLimits,
) -> anyhow::Result<()> {
    for limit in host.current_config().gateway_settings().rate_limits {
        let parsed = switchboard_gateway::RateLimits::parse([&limit.limit])
            .map_err(|e| anyhow::anyhow!("{}", limit.issue(e)))?;
        limits.extend(parsed);
    }
    Ok(())
}

/// `HOST:PORT`, `[V6]:PORT`, or a bare port on 127.0.0.1.
fn parse_addr(text: &str) -> anyhow::Result<SocketAddr> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Some(port) = text.strip_prefix("localhost:")
        && let Ok(port) = port.parse::<u16>()
    {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    bail!("--http wants HOST:PORT or a port, not {text:?}")
}
