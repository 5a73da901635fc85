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
    #[error("no server named `{0}`")]
    NoSuchServer(String),
    #[error("server `{server}` is {state}")]
    NotConnected { server: String, state: &'static str },
    #[error("server `{server}` offers no {what}")]
    NotOffered { server: String, what: &'static str },
    #[error("server `{server}` has no prompt `{name}`")]
    NoSuchPrompt { server: String, name: String },
    #[error("`{0}` is not a prompt name like mcp__<server>__<prompt>")]
    NotAPromptName(String),
    #[error("server `{server}`: {what}: no answer within {} ms", .after.as_millis())]
    Timeout {
        server: String,
        what: &'static str,
        after: Duration,
    },
    #[error("server `{server}`: {what}")]
    Request {
        server: String,
        what: &'static str,
        #[source]
        source: Box<RequestError>,
    },
    #[error("server `{server}`: the output budget")]
    Budget {
        server: String,
        #[source]
        source: BudgetError,
    },
    #[error(transparent)]
    Catalog(Box<CatalogError>),
    #[error("required server(s) did not connect: {}", .0.join(", "))]
    RequiredFailed(Vec<String>),
    #[error("server `{server}`: {message}")]
    Other { server: String, message: String },
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
                CatalogError::List { server, .. } | CatalogError::ListTimeout { server, .. } => {
                    Some(server)
                }
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
