//! Switchboard: the host side of the Model Context Protocol.
//!
//! [`Host`] is the one door: build it from the user's configuration (every scope, managed
//! policy, project approvals), and it connects every server, keeps one catalogue of their
//! tools, resources and prompts, and runs each request through permissions, time limits,
//! progress, the servers' questions and the output budget. The `switchboard` command line and
//! its gateway are two programs built on it; an agent embeds it the same way.
//!
//! The public modules, each what an embedding program (or the CLI and the gateway) works with;
//! the types the façade hands out are re-exported here too:
//!
//! - [`host`] — the façade: [`Host`], [`HostBuilder`], calls, listings, events, reload.
//! - [`config`] — reading every scope's configuration, editing it under a lock, plugins and
//!   MCPB bundles.
//! - [`interaction`] — what the program answers for servers: elicitation, sampling, roots.
//! - [`permissions`] — permission rules, hooks and the prompter that asks a person.
//! - [`auth`] — OAuth for remote servers: options, login, token stores.
//! - [`budget`] — the output budget results go through.
//! - [`search`] — the BM25 index behind tool search.
//! - [`scan`] — checks of servers' tools and prompts for what is aimed at the model or hidden
//!   from the user (`switchboard mcp scan`, `"scanOnPin"`).
//! - [`secrets`] — configured secrets, in the keychain or an owner-only file.
//! - [`shared`] — the Redis store gateway replicas share (tokens, needs-auth, lists, sessions).
//! - [`registry`] — the MCP Registry client and `server.json` to configuration entries.
//! - [`import`] — other hosts' configuration files, read as entries.
//! - [`guard`] — the process that stops stdio servers when the program is killed.
//! - [`redact`] — secrets kept out of what is shown (URLs, headers).
//! - [`env_vars`] — the environment variables Switchboard reads, and the limits they set.
//! - [`extensions`] — the protocol's extensions a host declares, and MCP Apps' rules
//!   (app-only tools, `ui://` resources).
//!
//! Build, settle, list, call (this example runs as a test, against the repository's test
//! server):
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let kit = std::env::var("SWITCHBOARD_TESTKIT_SERVER").unwrap_or_else(|_| {
//! #     concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/debug/testkit-server").to_owned()
//! # });
//! # let dir = tempfile::tempdir()?;
//! # let config = dir.path().join("mcp.json");
//! # let servers = serde_json::json!({"mcpServers": {"echo": {"command": kit}}});
//! # std::fs::write(&config, servers.to_string())?;
//! # let config = config.display().to_string();
//! use std::time::Duration;
//! use switchboard::{CallOptions, Host, Readiness};
//!
//! // `config` is the program's own `mcp.json` (`{"mcpServers": {"echo": {"command": …}}}`).
//! let host = Host::builder()
//!     .dynamic_config(vec![config])
//!     // Its configuration is the whole configuration: no user, project or managed file.
//!     .isolated()
//!     // MCP tools are `ask` by default: a program's call is denied unless a rule allows it
//!     // or a prompter says yes (`.permissions(Arc::new(permissions::AllowReadOnly))`).
//!     .allow(["mcp__echo__*"])
//! #   .state_dir(dir.path().join("state"))
//!     .start()?;
//! // The servers connect in the background; wait until none is still connecting.
//! if let Readiness::TimedOut { pending } = host.wait_settled(Duration::from_secs(30)).await? {
//!     eprintln!("still connecting: {pending:?}");
//! }
//! for tool in host.tools().await.tools {
//!     // What a model API takes: name, description, input schema.
//!     let definition = tool.model_definition();
//!     println!("{} - {}", definition.name, definition.description);
//! }
//! let arguments = serde_json::json!({"text": "hello"});
//! let arguments = arguments.as_object().cloned().unwrap_or_default();
//! let outcome = host
//!     .call("mcp__echo__echo", arguments, CallOptions::default())
//!     .await?;
//! assert_eq!(outcome.text(), "hello");
//! // Stops the servers; every `host.events()` stream ends.
//! host.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! `examples/embed.rs` at the repository's root is the same as a whole program (events,
//! permissions, exit codes): `cargo run -p switchboard --example embed -- CONFIG TOOL ARGS`.

pub mod auth;
pub mod budget;
mod catalog;
pub mod config;
mod connection;
mod cores;
pub mod env_vars;
mod environment;
pub mod extensions;
pub mod guard;
pub mod host;
pub mod import;
pub mod interaction;
mod keychain;
mod manager;
mod name;
mod net;
pub mod permissions;
mod pins;
pub mod redact;
pub mod registry;
pub mod scan;
pub mod search;
pub mod secrets;
pub mod shared;
pub(crate) mod transport;

pub use catalog::{
    BuiltinTool, CatalogError, CatalogEvent, CatalogIssue, MAX_DESCRIPTION, ModelTool, Snapshot,
    Tool, ToolTraits, ToolsView,
};
pub use connection::{
    Annotations, Capabilities, Completion, CompletionTarget, Failure, Generation, LogLevel,
    MAX_LIST_PAGES, Progress, RequestError, ServerInfo, ServerLog, ServerState, StateKind,
    TaskInfo, TaskStatus, ToolDef, TransportError,
};
pub use extensions::Extensions;
#[doc(inline)]
pub use host::{CallError, CallOptions, CallOutcome, Host, HostBuilder};
pub use host::{
    ContentBlock, Events, FetchedSkill, HostError, HostEvent, Listed, Listing, PromptEntry,
    ReadOutcome, Readiness, RequestOptions, SkillEntry, SkillFile, SkillFileRef, StartError,
    Started, TaskHandle, TaskRecord, UserLogin,
};
pub use manager::{
    InProcessFactory, LoginError, ManagerError, Reloaded, ServerEvent, forget_needs_auth,
    forget_shared_needs_auth,
};
pub use name::{MAX_QUALIFIED_NAME, QualifiedName};
pub use pins::{ChangeKind, PinChange, PinEntry, PinError, Retyped};
pub use redact::redact_url;

/// A time as RFC 3339 in UTC, to the millisecond (`2026-12-01T09:30:00.250Z`): the gateway's
/// audit log.
pub fn rfc3339_millis(time: std::time::SystemTime) -> String {
    host::rfc3339_to(time, true)
}

/// An error and its causes on one line (`error: cause: cause`), each cause once: a cause whose
/// text the line already holds is not repeated. For surfaces that show an error as one text
/// (a tool's error result, a warning) and would otherwise lose its causes: the errors of this
/// library keep their causes as [`source`](std::error::Error::source)s, not in their message.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        let more = e.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = e.source();
    }
    text
}
