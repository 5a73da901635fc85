//! What a request through the [`Host`](super::Host) other than a call can fail with.

use std::time::Duration;

use crate::budget::BudgetError;
use crate::catalog::CatalogError;
use crate::connection::RequestError;
use crate::manager::{LoginError, ManagerError, RequestFailure};

/// Why [`HostBuilder::start`](super::HostBuilder::start) refused to start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// A variable of [`Limits`](crate::env_vars::Limits) is set but not valid.
    #[error(transparent)]
    Limits(#[from] crate::env_vars::EnvVarError),
    /// A pattern given in code is not a tool pattern.
    #[error("{method}: {message}")]
    Pattern {
        /// The builder call that gave it: `HostBuilder::allow` or `HostBuilder::deny`.
        method: &'static str,
        /// What is wrong with it, naming it.
        message: String,
    },
}

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
        state: crate::StateKind,
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
    /// The prompt is held: it differs from its pin, or its server never listed it before
    /// (see [`Host::pin_changes`](super::Host::pin_changes)).
    #[error(
        "prompt `{name}` of server `{server}` is held: changed since pinned, or new; run `switchboard mcp diff {server}` to see why, and `switchboard mcp approve {server} --changes` to accept it"
    )]
    PromptHeld {
        /// The server.
        server: String,
        /// The prompt's name on its server.
        name: String,
    },
    /// The server serves no skill by this name (nor at this `SKILL.md` URI).
    #[error("server `{server}` has no skill `{name}`")]
    NoSuchSkill {
        /// The server.
        server: String,
        /// The name asked for.
        name: String,
    },
    /// Several of the server's skills have this name: each is asked for by its qualified name
    /// or its path.
    #[error("server `{server}` has several skills named `{name}`: {}", .candidates.join(", "))]
    SkillAmbiguous {
        /// The server.
        server: String,
        /// The name asked for.
        name: String,
        /// The qualified names of the skills that have it.
        candidates: Vec<String>,
    },
    /// The skill's entry cannot be loaded: it breaks the extension's rules, gives no digests
    /// (`"dynamic"`), or is over the extension's limits.
    #[error("server `{server}`: skill `{skill}` is not loaded: {reason}")]
    SkillRefused {
        /// The server.
        server: String,
        /// The skill (its `SKILL.md` URI when it has no usable name).
        skill: String,
        /// Why.
        reason: String,
    },
    /// A file of the skill is not what its manifest says (size, digest, or a `SKILL.md` whose
    /// frontmatter differs from the entry's): it was not used.
    #[error("server `{server}`: skill `{skill}`: {file} failed verification: {reason}")]
    SkillIntegrity {
        /// The server.
        server: String,
        /// The skill's name.
        skill: String,
        /// The file's URI.
        file: String,
        /// What differs.
        reason: String,
    },
    /// The host was built with its servers given ([`HostBuilder::servers`](super::HostBuilder::servers)),
    /// not read from files: there is nothing to read again.
    #[error("the servers were given, not read from configuration files: nothing to reload")]
    NotReloadable,
    /// A configuration file that read before does not now (half written by an editor, say):
    /// the reload applied nothing, and the configuration stays as it was.
    #[error("the configuration was kept as it was: {0}")]
    ReloadRefused(Box<crate::config::ConfigIssue>),
    /// No server offers a resource with this URI (nor a template it fits).
    #[error("no server offers the resource `{0}`")]
    NoSuchResource(String),
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
    /// The OAuth login of the server could not start ([`Host::login`](super::Host::login)).
    #[error("server `{server}`: cannot log in")]
    Login {
        /// The server.
        server: String,
        /// Why.
        #[source]
        source: LoginError,
    },
    /// The server takes each caller's own login (`"credentials": "per-user"`) and this
    /// caller has none ([`Host::begin_user_login`](super::Host::begin_user_login)).
    #[error("server `{server}`: {message}")]
    NeedsUserLogin {
        /// The server.
        server: String,
        /// The caller (`None`: the request named none, so none can log in).
        user: Option<String>,
        /// Why.
        message: String,
    },
    /// Project servers' approvals could not be recorded
    /// ([`Host::decide_project_servers`](super::Host::decide_project_servers)).
    #[error("cannot record the approvals in {}", .file.display())]
    Approvals {
        /// The approvals file.
        file: std::path::PathBuf,
        /// Why.
        #[source]
        source: crate::config::ConfigError,
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
            | HostError::PromptHeld { server, .. }
            | HostError::NoSuchSkill { server, .. }
            | HostError::SkillAmbiguous { server, .. }
            | HostError::SkillRefused { server, .. }
            | HostError::SkillIntegrity { server, .. }
            | HostError::Timeout { server, .. }
            | HostError::Request { server, .. }
            | HostError::Budget { server, .. }
            | HostError::Login { server, .. }
            | HostError::NeedsUserLogin { server, .. } => Some(server),
            HostError::Catalog(e) => match &**e {
                CatalogError::List { server, .. } | CatalogError::ListTimeout { server, .. } => {
                    Some(server)
                }
                CatalogError::Manager(e) => e.server(),
                _ => None,
            },
            _ => None,
        }
    }

    /// The server did not answer in time (the request's timeout, or its transport's).
    pub fn is_timeout(&self) -> bool {
        match self {
            HostError::Timeout { .. } => true,
            HostError::Request { source, .. } => source.is_timeout(),
            HostError::Catalog(e) => catalog_timeout(e),
            _ => false,
        }
    }

    /// The server waits for a login (`switchboard mcp login NAME`), or a login started for it
    /// did not get as far as an authorization URL.
    pub fn needs_auth(&self) -> bool {
        match self {
            HostError::NotConnected { state, .. } => *state == NEEDS_AUTH,
            HostError::Request { source, .. } => matches!(**source, RequestError::NeedsAuth(_)),
            HostError::Login { source, .. } => login_pending(source),
            HostError::Catalog(e) => catalog_needs_auth(e),
            HostError::NeedsUserLogin { .. } => true,
            _ => false,
        }
    }

    /// The server that waits for this caller's own login (per-user credentials), and the
    /// caller, when that is why the request failed.
    pub fn needs_user_login(&self) -> Option<(&str, Option<&str>)> {
        match self {
            HostError::NeedsUserLogin { server, user, .. } => Some((server, user.as_deref())),
            _ => None,
        }
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
            ManagerError::Request { server, source } => HostError::Request {
                server,
                what: "request",
                source,
            },
            ManagerError::Login { server, source } => HostError::Login { server, source },
            ManagerError::NeedsUserLogin {
                server,
                user,
                message,
            } => HostError::NeedsUserLogin {
                server,
                user,
                message,
            },
        }
    }
}

/// A server's `needs-auth` state.
const NEEDS_AUTH: crate::StateKind = crate::StateKind::NeedsAuth;

/// A login that failed or ran out of time leaves its server waiting for one; a server that
/// cannot log in (neither `http` nor `sse`) does not wait for one.
pub(super) fn login_pending(error: &LoginError) -> bool {
    !matches!(
        error,
        LoginError::NotHttp | LoginError::NotPerUser | LoginError::UnknownLogin
    )
}

/// A catalogue lookup failed because the server's `tools/list` got no answer in time.
pub(super) fn catalog_timeout(error: &CatalogError) -> bool {
    match error {
        CatalogError::List { source, .. } => source.is_timeout(),
        CatalogError::Manager(ManagerError::Request { source, .. }) => source.is_timeout(),
        _ => false,
    }
}

/// A catalogue lookup failed because the server waits for a login.
pub(super) fn catalog_needs_auth(error: &CatalogError) -> bool {
    match error {
        CatalogError::Manager(ManagerError::NotConnected { state, .. }) => *state == NEEDS_AUTH,
        CatalogError::Manager(ManagerError::Login { source, .. }) => login_pending(source),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::auth::AuthError;
    use crate::budget::BudgetError;
    use crate::host::CallError;

    #[test]
    fn a_call_error_keeps_its_cause_out_of_its_message_and_in_its_chain() {
        let error = CallError::Catalog {
            tool: "mcp__s__t".to_owned(),
            source: Box::new(CatalogError::List {
                server: "s".to_owned(),
                source: Box::new(RequestError::Timeout(Duration::from_millis(5))),
            }),
        };
        assert_eq!(error.to_string(), "cannot look up `mcp__s__t`");
        assert_eq!(
            crate::error_chain(&error),
            "cannot look up `mcp__s__t`: server `s`: cannot list tools: no answer within 5 ms"
        );
        assert_eq!(error.server(), Some("s"));
        assert!(error.is_timeout());
        assert!(!error.needs_auth());

        let budget = CallError::Budget {
            server: "s".to_owned(),
            tool: "mcp__s__t".to_owned(),
            source: BudgetError::NotAnObject {
                what: "tool result",
            },
        };
        assert_eq!(
            crate::error_chain(&budget),
            "`mcp__s__t` on server `s`: the output budget: a tool result must be a JSON object"
        );
        assert_eq!(budget.server(), Some("s"));
        assert!(!budget.is_timeout() && !budget.needs_auth() && !budget.is_denied());
    }

    #[test]
    fn a_failed_login_names_its_server_and_still_needs_auth() {
        let failed = CallError::Login {
            server: "s".to_owned(),
            tool: "mcp__s__authenticate".to_owned(),
            source: LoginError::Auth(AuthError::Discovery {
                what: "no metadata".to_owned(),
                source: None,
            }),
        };
        assert_eq!(
            failed.to_string(),
            "`mcp__s__authenticate`: cannot log in to server `s`"
        );
        assert_eq!(
            crate::error_chain(&failed),
            "`mcp__s__authenticate`: cannot log in to server `s`: the authorization failed: \
             OAuth discovery failed: no metadata"
        );
        assert_eq!(failed.server(), Some("s"));
        assert!(failed.needs_auth());

        let host = HostError::from(ManagerError::Login {
            server: "s".to_owned(),
            source: LoginError::NotHttp,
        });
        assert_eq!(host.to_string(), "server `s`: cannot log in");
        assert_eq!(host.server(), Some("s"));
        assert!(!host.needs_auth(), "a stdio server waits for no login");
        let host = HostError::from(ManagerError::Login {
            server: "s".to_owned(),
            source: LoginError::NoUrl,
        });
        assert!(host.needs_auth());
    }

    #[test]
    fn a_transport_error_of_the_manager_stays_a_request_error_of_the_host() {
        let host = HostError::from(ManagerError::Request {
            server: "s".to_owned(),
            source: Box::new(RequestError::Timeout(Duration::from_millis(7))),
        });
        assert!(host.is_timeout());
        assert_eq!(host.server(), Some("s"));
        assert_eq!(
            crate::error_chain(&host),
            "server `s`: request: no answer within 7 ms"
        );
        let catalog = HostError::from(CatalogError::Manager(ManagerError::NotConnected {
            server: "s".to_owned(),
            state: NEEDS_AUTH,
        }));
        assert_eq!(catalog.server(), Some("s"));
        assert!(catalog.needs_auth());
    }

    #[test]
    fn a_chain_repeats_no_cause_the_message_holds() {
        let error = CallError::Request {
            server: "s".to_owned(),
            tool: "mcp__s__t".to_owned(),
            source: RequestError::Closed,
        };
        assert_eq!(
            crate::error_chain(&error),
            "`mcp__s__t` on server `s`: the connection closed"
        );
    }
}
