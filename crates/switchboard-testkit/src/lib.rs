//! Test partners for Switchboard: a real MCP server with fault injection, helpers to start it
//! from other crates' tests, and real configuration trees on disk ([`config_tree`]).
//!
//! The server is the `testkit-server` binary of this crate (see [`options`] for
//! its flags). `cargo test --workspace` builds it, because this crate's own
//! integration tests need it; a crate tested alone (`cargo test -p other`)
//! should build it first with `cargo build -p switchboard-testkit --bins`.
//! [`server_bin`] finds it and [`TestServer`] runs it on a network transport.

pub mod apps_server;
pub mod ask;
mod bridge;
#[cfg(feature = "opener")]
mod browser;
#[cfg(feature = "opener")]
pub use browser::Browser;
pub mod cli;
pub mod config_tree;
pub mod file_tools;
mod filter;
pub mod gateway_client;
mod harness;
#[cfg(feature = "host")]
pub mod host;
#[cfg(feature = "opener")]
pub mod host_events;
mod http;
pub mod mcp_http;
pub mod mcp_servers;
mod net;
mod oauth;
pub mod options;
pub mod ports;
pub mod raw_http;
pub mod redis;
pub mod registry;
pub mod samples;
pub mod server;
pub mod skills;
mod sse;
mod stdio;
pub use stdio::serve_in_memory;
mod task_tools;
mod tools;
mod ws;

pub use harness::{
    DEFAULT_START_WAIT, ReferenceServer, SERVER_BIN_ENV, SETTLE, TestServer, TestServerError, WAIT,
    server_bin,
};
pub use options::{Options, ProtocolMode, Transport};
