//! Helpers shared by the integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use switchboard::HostBuilder;
use switchboard::auth::{AuthOptions, TokenStore};
use switchboard::config::{Environment, Origin, Scope, ServerConfig, parse_entry_value};
use switchboard::host::{CallOptions, Host};
use switchboard::permissions::AllowAll;
use switchboard::permissions::CallSource;
use switchboard_testkit::{Browser, TestServer};

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

/// A host's builder with only `servers`, its state (tokens included) in `state`, `browser`
/// logging in (when `interactive`), and every call allowed: these tests are about
/// authorization, not permissions.
pub(crate) fn auth_builder(
    servers: Vec<ServerConfig>,
    state: &Path,
    browser: &Arc<Browser>,
    interactive: bool,
) -> HostBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let auth = AuthOptions {
        store: TokenStore::in_dir(state),
        interactive,
        opener: browser.clone(),
        ..AuthOptions::default()
    };
    Host::builder()
        .discover(state.to_owned())
        .env(Environment::default())
        .servers(servers)
        .state_dir(state.to_owned())
        .auth(auth)
        .permissions(Arc::new(AllowAll))
}

/// A POST to one of the testkit server's control endpoints (`/test/...`), which must succeed.
pub(crate) async fn control(server: &TestServer, path: &str) {
    let endpoint = server.url();
    let url = format!(
        "{}{path}",
        endpoint
            .strip_suffix("/mcp")
            .or_else(|| endpoint.strip_suffix("/sse"))
            .unwrap_or(endpoint)
    );
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .tls_backend_rustls()
        .build()
        .unwrap();
    assert!(client.post(url).send().await.unwrap().status().is_success());
}

/// The options of a person's call on the command line (their approval).
pub(crate) fn cli() -> CallOptions {
    CallOptions {
        source: CallSource::CommandLine,
        ..CallOptions::default()
    }
}

/// A call's arguments: the object `value` (none when it is not one).
pub(crate) fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

/// The testkit server's entry, with these flags.
pub(crate) fn testkit(args: &[&str]) -> Value {
    json!({"command": switchboard_testkit::server_bin(), "args": args})
}

/// A partner's entry point, from the environment `scripts/test.sh` sets up.
#[allow(clippy::disallowed_methods)]
pub(crate) fn partner(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run the tests with `bash scripts/test.sh`, which installs the pinned test partners")
    })
}

/// The testkit server behind `/bin/sh`, which counts its starts in `marker`; `extra` adds to
/// the entry (`startup`, `idleTimeout`, ...).
pub(crate) fn counted(marker: &Path, extra: &Value) -> Value {
    let script = format!(
        "echo started >> '{}'; exec '{}' \"$@\"",
        marker.display(),
        switchboard_testkit::server_bin().display()
    );
    let mut entry = json!({"command": "/bin/sh", "args": ["-c", script, "testkit-server"]});
    if let (Some(entry), Some(extra)) = (entry.as_object_mut(), extra.as_object()) {
        entry.extend(extra.clone());
    }
    entry
}

/// How many times a [`counted`] server started.
pub(crate) fn starts(marker: &Path) -> usize {
    std::fs::read_to_string(marker)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// The property tests' settings: shrinking bounded (it may rewrite files many times over; a
/// few hundred steps find a small case), and no regression files beside the sources (a
/// failure prints its smallest input).
pub(crate) fn fuzz_config() -> proptest::prelude::ProptestConfig {
    proptest::prelude::ProptestConfig {
        max_shrink_iters: 512,
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    }
}
