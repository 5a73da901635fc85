//! Per-user upstream credentials at the gateway (`"credentials": "per-user"`): a caller's
//! call or read of such a server runs with the caller's own OAuth tokens (their subject is
//! [`CallOptions::user`](switchboard::CallOptions::user)); one who has none logs in here.
//!
//! - The login begins on the caller's first call or read ([`Host::begin_user_login`]), its
//!   redirect to the gateway's own [`CALLBACK_PATH`] (under `serve --public-url`, else the
//!   address it listens on), where [`callback`] finishes it: the code exchanged (PKCE), the
//!   tokens stored as the caller's who began it (the `state` names them).
//! - A client that takes URL-mode elicitation (2025-11-25 `elicitation.url`; a 2026-07-28
//!   client as an input round) is asked to open the authorization page; once it accepts, the
//!   call waits (at most [`LOGIN_WAIT`]) for the login to finish — here or on another
//!   replica — and runs. Any other client gets the JSON-RPC error
//!   [`URL_ELICITATION_REQUIRED`] (-32042, the 2025-11-25 `URLElicitationRequiredError`),
//!   the URL in its message, in `data.url` and as the `elicitations` entry the revision
//!   defines; it calls again once the user logged in.
//! - A listing shows a per-user server's kept tools to everyone; for a caller without tokens
//!   each carries [`LOGIN_META`] in its `_meta`.
//!
//! No token, code or `state` is logged or audited.
//!
//! [`Host::begin_user_login`]: switchboard::Host::begin_user_login

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{ClientCapabilities, ErrorCode};
use serde_json::{Value, json};
use switchboard::interaction::{ElicitAction, Elicitation, ElicitationRequest, Interaction};

use crate::Gateway;

/// Where the upstream's authorization server sends the browser back.
pub const CALLBACK_PATH: &str = "/oauth/callback";
/// The 2025-11-25 `URLElicitationRequiredError`: a client that cannot be asked is told the
/// URL to open.
pub const URL_ELICITATION_REQUIRED: i32 = -32042;
/// What a listed tool's `_meta` says when the caller has not logged in to its server yet.
pub const LOGIN_META: &str = "io.switchboard/login";
/// How long a call waits for its caller's login once they agreed to open the page.
pub(crate) const LOGIN_WAIT: Duration = Duration::from_secs(300);

/// Whether a client takes URL-mode elicitation (it declared `elicitation.url`).
pub(crate) fn takes_url(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities
        .and_then(|c| c.elicitation.as_ref())
        .is_some_and(|e| e.url.is_some())
}

/// Runs `attempt` (a request made for the caller `user`, its questions to `interaction`); when
/// it failed because the caller must first log in to a per-user server (`needs_login` names
/// it), the login ([`log_in`]; `tool` is named on the page) and `attempt` once more. The `Err`
/// is the error that tells the client where to log in, or why it cannot.
pub(crate) async fn retry_after_login<T, E, Fut>(
    gateway: &Gateway,
    caller: Caller<'_>,
    needs_login: impl Fn(&E) -> Option<(&str, Option<&str>)>,
    mut attempt: impl FnMut() -> Fut,
) -> Result<Result<T, E>, ErrorData>
where
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let outcome = attempt().await;
    let Some(server) = outcome
        .as_ref()
        .err()
        .and_then(&needs_login)
        .map(|(server, _)| server.to_owned())
    else {
        return Ok(outcome);
    };
    let Caller {
        user,
        interaction,
        url_mode,
        tool,
    } = caller;
    log_in(gateway, &server, user, interaction, url_mode, tool).await?;
    Ok(attempt().await)
}

/// Who a request that may need a login is made for ([`retry_after_login`]).
#[derive(Clone, Copy)]
pub(crate) struct Caller<'a> {
    /// The caller's subject (OAuth).
    pub(crate) user: Option<&'a str>,
    /// Where the request's questions go: the login page is put to it.
    pub(crate) interaction: Option<&'a Interaction>,
    /// The client takes URL-mode elicitation.
    pub(crate) url_mode: bool,
    /// The tool called, named on the page.
    pub(crate) tool: Option<&'a str>,
}

/// How a caller who has no tokens for `server` logs in: the page opened through `elicitor`
/// (when the client takes URL elicitation) and the login waited for — `Ok(())`, the request
/// may run again — or the error the client gets (the URL in it, or why there is none).
pub(crate) async fn log_in(
    gateway: &Gateway,
    server: &str,
    user: Option<&str>,
    interaction: Option<&Interaction>,
    url_mode: bool,
    tool: Option<&str>,
) -> Result<(), ErrorData> {
    let Some(user) = user else {
        return Err(ErrorData::new(
            ErrorCode::INVALID_REQUEST,
            format!(
                "server `{server}` takes each caller's own login (per-user credentials): it needs a caller with an OAuth identity (serve with --oauth-issuer)"
            ),
            None,
        ));
    };
    let Some(redirect) = gateway.callback_url() else {
        return Err(ErrorData::new(
            ErrorCode::INVALID_REQUEST,
            format!(
                "server `{server}` takes each caller's own login (per-user credentials): only `serve --http` hosts the login's redirect"
            ),
            None,
        ));
    };
    let host = gateway.host();
    let url = host
        .begin_user_login(user, server, &redirect)
        .await
        .map_err(|e| {
            ErrorData::new(
                ErrorCode::INTERNAL_ERROR,
                switchboard::error_chain(&e),
                None,
            )
        })?;
    let message = format!("Log in to `{server}` with your own account to continue.");
    let elicitor = interaction.and_then(|i| i.elicitor.as_ref());
    let Some(elicitor) = elicitor.filter(|_| url_mode) else {
        return Err(required(server, &url, &message));
    };
    let request = ElicitationRequest {
        server: server.to_owned(),
        tool: tool.map(str::to_owned),
        params: Elicitation::Url {
            message: message.clone(),
            url: url.clone(),
            elicitation_id: elicitation_id(),
        },
        refused: None,
    };
    let answer = elicitor.elicit(&request).await;
    if answer.action != ElicitAction::Accept {
        return Err(ErrorData::new(
            ErrorCode::INVALID_REQUEST,
            format!("the login to `{server}` was not accepted: the call did not run"),
            None,
        ));
    }
    if host.wait_user_login(user, server, LOGIN_WAIT).await {
        Ok(())
    } else {
        Err(ErrorData::new(
            ErrorCode::INVALID_REQUEST,
            format!(
                "the login to `{server}` did not finish within {} s",
                LOGIN_WAIT.as_secs()
            ),
            Some(json!({"url": url})),
        ))
    }
}

/// -32042 for a client that cannot be asked: the URL in the message, in `data.url`, and as
/// the revision's `data.elicitations` entry.
fn required(server: &str, url: &str, message: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode(URL_ELICITATION_REQUIRED),
        format!("{message} Open {url} in a browser, then call again."),
        Some(json!({
            "url": url,
            "server": server,
            "elicitations": [{
                "mode": "url",
                "elicitationId": elicitation_id(),
                "url": url,
                "message": message,
            }],
        })),
    )
}

/// A fresh id for a URL elicitation.
fn elicitation_id() -> String {
    let mut bytes = [0u8; 12];
    let _ = getrandom::fill(&mut bytes);
    hex::encode(bytes)
}

/// `GET /oauth/callback?…`: the redirect of a caller's login, finished here. A page for the
/// person in the browser: done (return to the client), or why not.
pub(crate) async fn callback(gateway: &Gateway, query: Option<&str>) -> (u16, String) {
    let params: BTreeMap<String, String> =
        url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    match gateway.host().finish_user_login(&params).await {
        Ok(done) => {
            tracing::info!(server = %done.server, "a caller logged in to a per-user server");
            (
                200,
                page(&format!(
                    "You are logged in to {}. You can close this page and return to your client.",
                    escape(&done.server)
                )),
            )
        }
        Err(e) => {
            let why = switchboard::error_chain(&e);
            tracing::info!("a login's redirect was refused: {why}");
            (
                400,
                page(&format!("The login did not complete: {}", escape(&why))),
            )
        }
    }
}

fn page(text: &str) -> String {
    format!("<!doctype html><meta charset=utf-8><title>Switchboard</title><p>{text}</p>\n")
}

/// `text` safe inside HTML.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Marks, in `tools`, those of per-user servers the caller `user` has not logged in to:
/// each keeps its definition (the server's kept list) with [`LOGIN_META`] in its `_meta`.
pub(crate) async fn mark_logins(
    gateway: &Gateway,
    user: Option<&str>,
    tools: &mut [switchboard::Tool],
) {
    let host = gateway.host();
    let mut known: BTreeMap<String, bool> = BTreeMap::new();
    for tool in tools.iter_mut() {
        let Some(server) = tool.server.clone() else {
            continue;
        };
        if !host.is_per_user(&server) {
            continue;
        }
        let logged_in = match known.get(&server) {
            Some(known) => *known,
            None => {
                let now = match user {
                    Some(user) => host.user_logged_in(user, &server).await,
                    None => false,
                };
                known.insert(server.clone(), now);
                now
            }
        };
        if logged_in {
            continue;
        }
        let note = json!({
            "needed": true,
            "server": server,
            "note": format!("`{server}` takes each caller's own login: calling this tool first asks you to log in"),
        });
        match &mut tool.meta {
            Some(Value::Object(meta)) => {
                meta.insert(LOGIN_META.to_owned(), note);
            }
            meta => *meta = Some(json!({ LOGIN_META: note })),
        }
    }
}
