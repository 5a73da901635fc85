//! OAuth 2.1 for remote servers, as the MCP authorization specification (2025-06-18 onward,
//! and 2026-07-28) has it: discovery, a client identity, PKCE, the authorization code flow
//! through a loopback redirect, token storage, refresh, step-up, and client credentials.
//!
//! Written on the process's reqwest client rather than rmcp's `auth` feature (see
//! ARCHITECTURE.md): the specification's refusals (no PKCE advertised, issuer or resource
//! mismatch, plain HTTP, a redirect to another origin, an unexpected `iss`) are enforced here.
//!
//! - [`Authorizer`] is one server's authorization: the transport asks it for a token before
//!   each request, and tells it about a 401 (refresh, else — when interactive — the whole
//!   flow, else `needs-auth`) or a 403 `insufficient_scope` (step-up, bounded).
//! - [`TokenStore`] keeps client identities and tokens, owner-only, under a file lock.
//! - Tokens never appear in logs or error messages: errors carry endpoints' origins, OAuth
//!   error codes and descriptions, never a token, a code or a secret.

mod callback;
mod challenge;
mod discovery;
mod dpop;
mod flow;
mod hosted;
mod identity;
use crate::keychain;
mod store;
mod tokens;

use std::sync::Arc;
use std::time::Duration;

pub use callback::{Opener, SystemOpener};
pub(crate) use challenge::Challenge;
pub use flow::{AuthStatus, Authorizer, Presentation};
pub(crate) use hosted::{HOSTED_LOGIN_TTL, Pending};
pub use store::{RecordSeal, StoreKind, TokenStore};

/// Callers' latest access tokens at the gateway, by caller: the subject tokens of token
/// exchange (`oauth.tokenExchange`). Held in memory only.
pub(crate) type SubjectTokens = Arc<parking_lot::Mutex<std::collections::HashMap<String, String>>>;

/// The bound on each OAuth request (metadata, registration, token).
pub const OAUTH_TIMEOUT: Duration = Duration::from_secs(60);
/// Tokens this close to expiry are refreshed before a request.
pub const REFRESH_MARGIN: Duration = Duration::from_secs(60);
/// At most this many step-up authorizations for one server connection.
pub const MAX_STEP_UPS: u32 = 2;
/// How long the loopback listener waits for the user to finish in the browser.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// Why authorization did not succeed. Messages never carry tokens, codes or secrets; the
/// cause, when there is one, is the error's [`source`](std::error::Error::source) (print the
/// error with [`error_chain`](crate::error_chain) to show it).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The user has to log in (no tokens, or the refresh token was refused).
    #[error("{0}")]
    NeedsLogin(String),
    #[error("OAuth discovery failed{}", detail(.what))]
    Discovery {
        /// What failed, when more than the cause says.
        what: String,
        /// The cause.
        #[source]
        source: Option<AuthCause>,
    },
    /// Something unsafe was refused (plain HTTP, mismatched issuer or resource, no PKCE …).
    #[error("refused: {0}")]
    Refused(String),
    #[error("client registration failed{}", detail(.what))]
    Registration {
        /// What failed, when more than the cause says.
        what: String,
        /// The cause.
        #[source]
        source: Option<AuthCause>,
    },
    #[error("the authorization server refused: {0}")]
    Denied(String),
    #[error("the token request failed{}", detail(.what))]
    Token {
        /// What failed, when more than the cause says.
        what: String,
        /// The cause.
        #[source]
        source: Option<AuthCause>,
    },
    #[error("the redirect listener{}", detail(.what))]
    Callback {
        /// What failed, when more than the cause says.
        what: String,
        /// The cause.
        #[source]
        source: Option<AuthCause>,
    },
    #[error("the token store{}", detail(.what))]
    Store {
        /// What failed, when more than the cause says.
        what: String,
        /// The cause.
        #[source]
        source: Option<AuthCause>,
    },
    #[error("{0}")]
    Config(String),
}

/// `: what`, or nothing when `what` is empty (the cause says it all).
fn detail(what: &str) -> String {
    if what.is_empty() {
        String::new()
    } else {
        format!(": {what}")
    }
}

/// What an OAuth step failed on: the source of an [`AuthError`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthCause {
    /// The request to an endpoint got no answer. `origin` is the endpoint's
    /// `scheme://host:port` (never its path or query); the error carries no URL.
    #[error("{origin}: {}", crate::net::failure_kind(.source))]
    Http {
        /// `scheme://host:port` of the endpoint.
        origin: String,
        /// The HTTP client's error, its URL removed.
        #[source]
        source: reqwest::Error,
    },
    /// The endpoint at `origin` answered with a failure status, and perhaps an OAuth error
    /// (`error: error_description`).
    #[error("{origin} answered HTTP {status}{}", detail(.error.as_deref().unwrap_or_default()))]
    Status {
        /// `scheme://host:port` of the endpoint.
        origin: String,
        /// The HTTP status.
        status: u16,
        /// The OAuth `error` (and its description), when the body had one.
        error: Option<String>,
    },
    /// A file or a socket.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// JSON that could not be read or written.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The shared store of the gateway's replicas.
    #[error(transparent)]
    Store(#[from] crate::shared::StoreError),
}

impl AuthCause {
    /// A request to `endpoint` that got no answer (the error's URL is removed).
    pub(crate) fn http(endpoint: &url::Url, error: reqwest::Error) -> Self {
        AuthCause::Http {
            origin: discovery::origin_of(endpoint),
            source: error.without_url(),
        }
    }

    /// `endpoint`'s answer with a failure `status`: the OAuth error in `body`, when it has one.
    pub(crate) fn status(endpoint: &url::Url, status: reqwest::StatusCode, body: &[u8]) -> Self {
        AuthCause::Status {
            origin: discovery::origin_of(endpoint),
            status: status.as_u16(),
            error: serde_json::from_slice::<tokens::OAuthErrorBody>(body)
                .ok()
                .map(|body| body.describe()),
        }
    }
}

impl AuthError {
    /// Whether an HTTP request of the authorization ran out of time.
    pub fn is_timeout(&self) -> bool {
        match self {
            AuthError::Discovery { source, .. }
            | AuthError::Registration { source, .. }
            | AuthError::Token { source, .. }
            | AuthError::Callback { source, .. }
            | AuthError::Store { source, .. } => {
                matches!(source, Some(AuthCause::Http { source, .. }) if source.is_timeout())
            }
            _ => false,
        }
    }
}

/// How the host authorizes servers.
#[derive(Clone)]
pub struct AuthOptions {
    /// Where tokens are kept.
    pub store: TokenStore,
    /// Run the browser flow by itself when a server wants authorization. Off for a host
    /// (the server goes to `needs-auth` and the user runs `switchboard mcp login NAME`);
    /// on for `mcp login` and for programs that log in inline.
    pub interactive: bool,
    /// Shows the authorization URL to the user.
    pub opener: Arc<dyn Opener>,
    /// The URL of a Client ID Metadata Document to use as the client id where the
    /// authorization server supports it.
    pub client_metadata_url: Option<String>,
    /// How long the loopback listener waits for the redirect.
    pub login_timeout: Duration,
    /// The client name sent on dynamic registration.
    pub client_name: String,
}

impl std::fmt::Debug for AuthOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthOptions")
            .field("store", &self.store)
            .field("interactive", &self.interactive)
            .field("client_metadata_url", &self.client_metadata_url)
            .finish_non_exhaustive()
    }
}

impl Default for AuthOptions {
    fn default() -> Self {
        AuthOptions {
            store: TokenStore::in_memory(),
            interactive: false,
            opener: Arc::new(SystemOpener::default()),
            client_metadata_url: None,
            login_timeout: LOGIN_TIMEOUT,
            client_name: "Switchboard".to_owned(),
        }
    }
}

/// The message of a server that needs the user to log in.
pub fn login_hint(server: &str) -> String {
    login_hint_in(server, None)
}

/// [`login_hint`] for tokens kept in the shared store at `store` (its URL, password masked):
/// a login without `--store` would keep them where no replica looks.
pub(crate) fn login_hint_in(server: &str, store: Option<&str>) -> String {
    match store {
        Some(url) => format!("run `switchboard mcp login {server} --store {url}` to authorize"),
        None => format!("run `switchboard mcp login {server}` to authorize"),
    }
}
