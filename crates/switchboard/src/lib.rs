//! Switchboard: the host side of the Model Context Protocol.
//!
//! [`Host`] is the one door: build it from the user's configuration (every scope, managed
//! policy, project approvals), and it connects every server, keeps one catalogue of their
//! tools, resources and prompts, and runs each request through permissions, time limits,
//! progress, the servers' questions and the output budget. The `switchboard` command line and
//! its gateway are two programs built on it; an agent embeds it the same way.
//!
//! Public modules are the ones an embedding program works with: [`host`] (the façade),
//! [`config`] (reading and editing configuration), [`interaction`] and [`permissions`] (what
//! the program answers), [`redact`] (secrets kept out of what is shown), [`auth`] (OAuth options and token stores), [`budget`], [`import`] and
//! [`env_vars`]. The types the façade hands out are re-exported here.

pub mod auth;
pub mod budget;
mod catalog;
pub mod config;
mod connection;
pub mod env_vars;
pub mod host;
pub mod import;
pub mod interaction;
mod manager;
pub mod permissions;
pub mod redact;
pub(crate) mod transport;

pub use catalog::{
    BuiltinTool, CatalogError, CatalogEvent, CatalogIssue, MAX_DESCRIPTION, MAX_QUALIFIED_NAME,
    Snapshot, Tool, ToolTraits, qualified_name, sanitize, server_of,
};
pub use connection::{
    Annotations, Capabilities, Completion, CompletionTarget, Failure, Generation, LogLevel,
    MAX_LIST_PAGES, Progress, RequestError, ServerInfo, ServerLog, ServerState, ToolDef,
};
pub use host::{
    CallError, CallOptions, CallOutcome, Events, Host, HostBuilder, HostError, HostEvent, Listed,
    Listing, PromptEntry, ReadOutcome, Readiness, RequestOptions,
};
pub use manager::{InProcessFactory, ManagerError, ServerEvent, forget_needs_auth};
pub use redact::redact_url;
