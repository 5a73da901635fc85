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
mod identity;
use crate::keychain;
mod store;
mod tokens;

use std::sync::Arc;
use std::time::Duration;

pub use callback::{Opener, SystemOpener};
pub(crate) use challenge::Challenge;
pub use flow::{AuthStatus, Authorizer, Presentation};
pub use store::{StoreKind, TokenStore};

/// The bound on each OAuth request (metadata, registration, token).
pub const OAUTH_TIMEOUT: Duration = Duration::from_secs(60);
/// Tokens this close to expiry are refreshed before a request.
pub const REFRESH_MARGIN: Duration = Duration::from_secs(60);
/// At most this many step-up authorizations for one server connection.
pub const MAX_STEP_UPS: u32 = 2;
/// How long the loopback listener waits for the user to finish in the browser.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// Why authorization did not succeed. Messages never carry tokens, codes or secrets.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The user has to log in (no tokens, or the refresh token was refused).
    #[error("{0}")]
    NeedsLogin(String),
    #[error("OAuth discovery failed: {0}")]
    Discovery(String),
    /// Something unsafe was refused (plain HTTP, mismatched issuer or resource, no PKCE …).
    #[error("refused: {0}")]
    Refused(String),
    #[error("client registration failed: {0}")]
    Registration(String),
    #[error("the authorization server refused: {0}")]
    Denied(String),
    #[error("the token request failed: {0}")]
    Token(String),
    #[error("the redirect listener: {0}")]
    Callback(String),
    #[error("the token store: {0}")]
    Store(String),
    #[error("{0}")]
    Config(String),
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
