//! What a request through the [`Host`](super::Host) other than a call can fail with.

use std::time::Duration;

use crate::budget::BudgetError;
use crate::catalog::CatalogError;
use crate::connection::RequestError;
use crate::manager::{ManagerError, RequestFailure};

/// A request to a server through the host (a listing, a read, a prompt, a completion, a login)
/// that did not succeed. Each variant names the server; the cause is kept as a source.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// No server has this name.
    #[error("no server named `{0}`")]
    NoSuchServer(String),
    /// The server is not connected (even after a reconnect was tried, for a request).
    #[error("server `{server}` is {state}")]
    NotConnected {
        /// The server.
        server: String,
        /// Its state ([`ServerState::label`](crate::ServerState::label)): `failed`,
        /// `needs-auth`, `disabled`…
        state: &'static str,
    },
    /// The server did not declare the capability the request needs.
    #[error("server `{server}` offers no {what}")]
    NotOffered {
        /// The server.
        server: String,
        /// What it does not offer: `resources`, `prompts`.
        what: &'static str,
    },
    /// The server lists no prompt by this name.
    #[error("server `{server}` has no prompt `{name}`")]
    NoSuchPrompt {
        /// The server.
        server: String,
        /// The name asked for.
        name: String,
    },
    /// The name is not shaped like a prompt's qualified name.
    #[error("`{0}` is not a prompt name like mcp__<server>__<prompt>")]
    NotAPromptName(String),
    /// The server did not answer in time.
    #[error("server `{server}`: {what}: no answer within {} ms", .after.as_millis())]
    Timeout {
        /// The server.
        server: String,
        /// The request: `resources/read`, `prompts/list`…
        what: &'static str,
        /// How long it was given.
        after: Duration,
    },
    /// The request failed: the server refused it or went away.
    #[error("server `{server}`: {what}")]
    Request {
        /// The server.
        server: String,
        /// The request: `resources/read`, `prompts/list`…
        what: &'static str,
        /// What went wrong.
        #[source]
        source: Box<RequestError>,
    },
    /// The output budget could not handle the answer (a file could not be written).
    #[error("server `{server}`: the output budget")]
    Budget {
        /// The server.
        server: String,
        /// What went wrong.
        #[source]
        source: BudgetError,
    },
    /// The catalogue could not list a server's tools.
    #[error(transparent)]
    Catalog(Box<CatalogError>),
    /// These `required` servers settled in a state other than `connected`.
    #[error("required server(s) did not connect: {}", .0.join(", "))]
    RequiredFailed(Vec<String>),
    /// Anything else the server's supervisor reported.
    #[error("server `{server}`: {message}")]
    Other {
        /// The server.
        server: String,
        /// What went wrong.
        message: String,
    },
}

impl HostError {
    /// The server the error is about, when there is one.
    pub fn server(&self) -> Option<&str> {
        match self {
            HostError::NoSuchServer(server)
            | HostError::NotConnected { server, .. }
            | HostError::NotOffered { server, .. }
            | HostError::NoSuchPrompt { server, .. }
            | HostError::Timeout { server, .. }
            | HostError::Request { server, .. }
            | HostError::Budget { server, .. }
            | HostError::Other { server, .. } => Some(server),
            HostError::Catalog(e) => match &**e {
                CatalogError::List { server, .. } => Some(server),
                _ => None,
            },
            _ => None,
        }
    }

    /// The server did not answer in time.
    pub fn is_timeout(&self) -> bool {
        match self {
            HostError::Timeout { .. } => true,
            HostError::Request { source, .. } => matches!(**source, RequestError::Timeout(_)),
            _ => false,
        }
    }

    /// The server waits for a login (`switchboard mcp login NAME`).
    pub fn needs_auth(&self) -> bool {
        matches!(
            self,
            HostError::NotConnected {
                state: "needs-auth",
                ..
            }
        )
    }

    /// A rule or the user refused it. (Listings, reads and prompts are not gated today.)
    pub fn is_denied(&self) -> bool {
        false
    }

    /// The server's own JSON-RPC error, when it answered with one.
    pub fn refusal(&self) -> Option<(i32, &str, Option<&serde_json::Value>)> {
        match self {
            HostError::Request { source, .. } => match &**source {
                RequestError::Refused {
                    code,
                    message,
                    data,
                } => Some((*code, message, data.as_ref())),
                _ => None,
            },
            _ => None,
        }
    }

    pub(crate) fn from_failure(server: &str, what: &'static str, failure: RequestFailure) -> Self {
        match failure {
            RequestFailure::Request(source) => HostError::Request {
                server: server.to_owned(),
                what,
                source: Box::new(source),
            },
            RequestFailure::Manager(e) => HostError::from(e),
        }
    }
}

impl From<CatalogError> for HostError {
    fn from(e: CatalogError) -> Self {
        HostError::Catalog(Box::new(e))
    }
}

impl From<ManagerError> for HostError {
    fn from(e: ManagerError) -> Self {
        match e {
            ManagerError::NoSuchServer(server) => HostError::NoSuchServer(server),
            ManagerError::NotConnected { server, state } => {
                HostError::NotConnected { server, state }
            }
            ManagerError::RequiredFailed(servers) => HostError::RequiredFailed(servers),
            ManagerError::Request { server, message } => HostError::Other { server, message },
        }
    }
}
