//! Switchboard: the host side of the Model Context Protocol.
//!
//! The library owns behaviour: reading which MCP servers a user configured (every scope, managed
//! policy, project approvals), and — as the later stages land — connecting them, turning their
//! tools into one catalogue and running calls. The `switchboard` binary and the gateway are two
//! programs that embed it.

pub mod auth;
pub mod budget;
pub mod catalog;
pub mod config;
pub mod connection;
pub mod env_vars;
pub mod host;
pub mod import;
pub mod interaction;
pub mod manager;
pub mod permissions;
pub(crate) mod transport;
