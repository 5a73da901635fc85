//! Helpers shared by the integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use switchboard::config::{Environment, Origin, Scope, ServerConfig, parse_entry_value};

/// A user-scope server entry, checked as configuration would be, expanded against `env`.
pub(crate) fn server_in(name: &str, entry: serde_json::Value, env: &Environment) -> ServerConfig {
    let origin = Origin {
        scope: Scope::User,
        file: None,
    };
    parse_entry_value(name, &entry, origin, env, "<test>")
        .unwrap()
        .0
}

/// [`server_in`] with the process's own environment.
pub(crate) fn server(name: &str, entry: serde_json::Value) -> ServerConfig {
    server_in(name, entry, &Environment::capture())
}
