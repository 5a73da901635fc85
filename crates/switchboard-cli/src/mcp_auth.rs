//! `switchboard mcp login NAME`, `mcp logout NAME`, and the auth line of `mcp get`. With
//! `--store REDIS_URL` the tokens are those the gateway's replicas share (`serve --store`):
//! a login there is one for every replica, and one waiting for it reconnects the server.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use anyhow::{anyhow, bail};
use switchboard::auth::{AuthOptions, AuthStatus, Authorizer, SystemOpener, TokenStore};
use switchboard::config::{ServerEntry, Transport};
use switchboard::shared::SharedStore;

use crate::context::Context;

/// The authorizer of a configured Streamable HTTP or legacy SSE server, or why there is none;
/// its tokens in `store` when given, else in this machine's token store.
fn authorizer(
    ctx: &Context,
    entry: &ServerEntry,
    store: Option<&SharedStore>,
) -> anyhow::Result<Authorizer> {
    let name = &entry.name;
    let config = entry
        .config
        .as_ref()
        .map_err(|issue| anyhow!("server `{name}` is not valid: {}", issue.message))?;
    let Some(remote) = config.transport.oauth_remote() else {
        bail!(
            "server `{name}` is a `{}` server; OAuth login is for `http` and `sse` servers",
            config.transport.type_name()
        );
    };
    let oauth = remote.oauth.clone().unwrap_or_default();
    let options = AuthOptions {
        store: match store {
            Some(store) => TokenStore::shared(store.clone()),
            None => TokenStore::from_env(&ctx.paths.state_dir, &ctx.env),
        },
        interactive: true,
        opener: Arc::new(SystemOpener {
            browser: ctx
                .env
                .get(switchboard::env_vars::EnvVars::BROWSER)
                .map(str::to_owned),
            quiet: false,
        }),
        client_metadata_url: oauth.client_metadata_url.clone(),
        ..AuthOptions::default()
    };
    Ok(
        Authorizer::new(name, &remote.url, oauth, ctx.env.clone(), options)
            .legacy_sse(matches!(config.transport, Transport::Sse(_))),
    )
}

fn entry<'a>(
    loaded: &'a switchboard::config::ConfigSet,
    name: &str,
) -> anyhow::Result<&'a ServerEntry> {
    loaded
        .get(name)
        .ok_or_else(|| anyhow!("no server named `{name}` is configured"))
}

/// The shared store `--store` names, connected (an error naming it when it cannot be).
async fn shared(url: Option<&str>) -> anyhow::Result<Option<SharedStore>> {
    match url {
        Some(url) => Ok(Some(SharedStore::connect(url).await.context("--store")?)),
        None => Ok(None),
    }
}

pub(crate) async fn login(
    ctx: &Context,
    name: &str,
    store: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let loaded = ctx.load();
    let entry = entry(&loaded, name)?;
    // A shared login would never be used: the gateway calls such a server with each
    // caller's own tokens, got by the caller's own login through it.
    if let Ok(config) = &entry.config
        && config.transport.oauth_remote().is_some_and(|r| r.per_user)
    {
        bail!(
            "server `{name}` takes each caller's own login (`\"credentials\": \"per-user\"` in {}): \
             `switchboard serve` asks each caller to log in on their first call; a login here \
             would never be used",
            entry.origin
        );
    }
    let store = shared(store).await?;
    let authorizer = authorizer(ctx, entry, store.as_ref())?;
    authorizer.login().await.map_err(|e| {
        anyhow!(
            "cannot log in to `{name}`: {}",
            switchboard::error_chain(&e)
        )
    })?;
    switchboard::forget_needs_auth(&ctx.paths.state_dir, name);
    if let Some(store) = &store {
        switchboard::forget_shared_needs_auth(store, name).await;
        println!("Logged in to `{name}`: its tokens are in {}.", store.url());
    } else {
        println!("Logged in to `{name}`.");
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn logout(
    ctx: &Context,
    name: &str,
    store: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let store = shared(store).await?;
    let had = forget_tokens(ctx, name, store.as_ref()).await?;
    if let Some(store) = &store {
        // The record's lock is released by the store's writer task: before this process
        // ends, or it would stay taken (until its TTL) for the next login or refresh.
        store.flush().await;
    }
    if had {
        println!(
            "Logged out of `{name}`: its tokens are revoked where the server allows, and forgotten."
        );
    } else {
        println!("`{name}` had no stored tokens.");
    }
    Ok(ExitCode::SUCCESS)
}

/// Revokes (where the server allows) and forgets a server's tokens (in `store` when given);
/// whether it had any. `mcp logout` and the console's `o`.
pub(crate) async fn forget_tokens(
    ctx: &Context,
    name: &str,
    store: Option<&SharedStore>,
) -> anyhow::Result<bool> {
    let loaded = ctx.load();
    let authorizer = authorizer(ctx, entry(&loaded, name)?, store)?;
    authorizer.logout().await.map_err(|e| {
        anyhow!(
            "cannot log out of `{name}`: {}",
            switchboard::error_chain(&e)
        )
    })
}

/// `logged in (expires in 12 min, refreshable)` / `not logged in`, for `http` and `sse` servers.
/// `mcp login` is offered only where it can help: the entry configures `oauth`, or the server
/// asked for authorization (`asked`: the probe found it waiting for a login). An entry that
/// sends its own `Authorization` header (or a `headersHelper`'s) says so instead, and one that
/// nothing asked of says that no login is needed.
pub(crate) async fn status_line(ctx: &Context, entry: &ServerEntry, asked: bool) -> Option<String> {
    let authorizer = authorizer(ctx, entry, None).ok()?;
    Some(match authorizer.status().await {
        Ok(AuthStatus::LoggedIn {
            expires_at,
            refreshable,
            scope,
        }) => {
            let mut parts = Vec::new();
            if let Some(at) = expires_at {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or_default();
                if at <= now {
                    parts.push("expired".to_owned());
                } else {
                    parts.push(format!("expires in {} min", (at - now).div_ceil(60)));
                }
            }
            if refreshable {
                parts.push("refreshable".to_owned());
            }
            if let Some(scope) = scope {
                parts.push(format!("scope: {scope}"));
            }
            if parts.is_empty() {
                "logged in".to_owned()
            } else {
                format!("logged in ({})", parts.join(", "))
            }
        }
        Ok(_) => {
            let remote = match entry.config.as_ref().map(|c| &c.transport) {
                Ok(
                    switchboard::config::Transport::Http(remote)
                    | switchboard::config::Transport::Sse(remote),
                ) => Some(remote),
                _ => None,
            };
            let oauth = remote.is_some_and(|r| r.oauth.is_some());
            let own_header = remote.is_some_and(|r| {
                r.headers_helper.is_some()
                    || r.headers
                        .keys()
                        .any(|k| k.trim().eq_ignore_ascii_case("authorization"))
            });
            if oauth || asked {
                format!("not logged in (`switchboard mcp login {}`)", entry.name)
            } else if own_header {
                "its own `Authorization` header (no login)".to_owned()
            } else {
                "none needed (the server asked for no authorization)".to_owned()
            }
        }
        Err(e) => format!("token store unreadable: {}", switchboard::error_chain(&e)),
    })
}
