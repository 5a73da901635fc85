//! `switchboard mcp login NAME`, `mcp logout NAME`, and the auth line of `mcp get`.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{anyhow, bail};
use switchboard::auth::{AuthOptions, AuthStatus, Authorizer, SystemOpener, TokenStore};
use switchboard::config::{ServerEntry, Transport};

use crate::context::Context;

/// The authorizer of a configured Streamable HTTP or legacy SSE server, or why there is none.
fn authorizer(ctx: &Context, entry: &ServerEntry) -> anyhow::Result<Authorizer> {
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
        store: TokenStore::from_env(&ctx.paths.state_dir, &ctx.env),
        interactive: true,
        opener: Arc::new(SystemOpener {
            browser: ctx.env.get("BROWSER").map(str::to_owned),
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

pub(crate) async fn login(ctx: &Context, name: &str) -> anyhow::Result<ExitCode> {
    let loaded = ctx.load();
    let authorizer = authorizer(ctx, entry(&loaded, name)?)?;
    authorizer
        .login()
        .await
        .map_err(|e| anyhow!("cannot log in to `{name}`: {e}"))?;
    switchboard::forget_needs_auth(&ctx.paths.state_dir, name);
    println!("Logged in to `{name}`.");
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn logout(ctx: &Context, name: &str) -> anyhow::Result<ExitCode> {
    let had = forget_tokens(ctx, name).await?;
    if had {
        println!(
            "Logged out of `{name}`: its tokens are revoked where the server allows, and forgotten."
        );
    } else {
        println!("`{name}` had no stored tokens.");
    }
    Ok(ExitCode::SUCCESS)
}

/// Revokes (where the server allows) and forgets a server's tokens; whether it had any.
/// `mcp logout` and the console's `o`.
pub(crate) async fn forget_tokens(ctx: &Context, name: &str) -> anyhow::Result<bool> {
    let loaded = ctx.load();
    let authorizer = authorizer(ctx, entry(&loaded, name)?)?;
    authorizer
        .logout()
        .await
        .map_err(|e| anyhow!("cannot log out of `{name}`: {e}"))
}

/// `logged in (expires in 12 min, refreshable)` / `not logged in`, for `http` and `sse` servers.
pub(crate) async fn status_line(ctx: &Context, entry: &ServerEntry) -> Option<String> {
    let authorizer = authorizer(ctx, entry).ok()?;
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
        Ok(_) => format!("not logged in (`switchboard mcp login {}`)", entry.name),
        Err(e) => format!("token store unreadable: {e}"),
    })
}
