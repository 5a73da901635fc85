//! Every environment variable Switchboard reads, in one place, and the limits they set.

use std::time::Duration;

use crate::environment::Environment;

/// Names of the environment variables Switchboard reads.
#[derive(Debug)]
pub struct EnvVars;

impl EnvVars {
    /// Connect timeout in milliseconds (default 30 000).
    pub const MCP_TIMEOUT: &'static str = "MCP_TIMEOUT";
    /// Tool-call timeout in milliseconds (default 100 000 000, about 27.8 hours).
    pub const MCP_TOOL_TIMEOUT: &'static str = "MCP_TOOL_TIMEOUT";
    /// Token budget of one tool result (default 25 000).
    pub const MAX_MCP_OUTPUT_TOKENS: &'static str = "MAX_MCP_OUTPUT_TOKENS";
    /// How many local (stdio) servers connect at once (default 3).
    pub const MCP_SERVER_CONNECTION_BATCH_SIZE: &'static str = "MCP_SERVER_CONNECTION_BATCH_SIZE";
    /// How many remote servers connect at once (default 20).
    pub const MCP_REMOTE_SERVER_CONNECTION_BATCH_SIZE: &'static str =
        "MCP_REMOTE_SERVER_CONNECTION_BATCH_SIZE";
    /// Overrides the user configuration directory (default `$XDG_CONFIG_HOME/switchboard`).
    pub const SWITCHBOARD_CONFIG_DIR: &'static str = "SWITCHBOARD_CONFIG_DIR";
    /// Overrides the state directory (default `$XDG_STATE_HOME/switchboard`).
    pub const SWITCHBOARD_STATE_DIR: &'static str = "SWITCHBOARD_STATE_DIR";
    /// Where OAuth tokens are kept: `auto` (default: the OS keychain where one answers, else
    /// the owner-only file), `file` or `keychain`.
    pub const SWITCHBOARD_TOKEN_STORE: &'static str = "SWITCHBOARD_TOKEN_STORE";
    /// Overrides the managed (administrator) configuration file.
    pub const SWITCHBOARD_MANAGED_CONFIG: &'static str = "SWITCHBOARD_MANAGED_CONFIG";
    /// Files the output budget wrote are removed at start once older than this many days
    /// (default 7).
    pub const SWITCHBOARD_OUTPUT_MAX_AGE_DAYS: &'static str = "SWITCHBOARD_OUTPUT_MAX_AGE_DAYS";
    /// The most bytes one message from a server may have, on every transport: a stdio line, an
    /// HTTP body, an event of an event stream, a WebSocket message (default 67 108 864, 64 MiB).
    /// A message over it fails its request; it is never read into memory past the limit.
    pub const SWITCHBOARD_MAX_MESSAGE_BYTES: &'static str = "SWITCHBOARD_MAX_MESSAGE_BYTES";
    /// `off` sends every request through the MCP SDK (rmcp), calls included; by default a
    /// `tools/call` to a stdio, in-process or Streamable HTTP server takes the host's own call
    /// lane (`transport/lane/`), which gives the same results for less CPU a call. `on` or
    /// unset: lanes. [`HostBuilder::call_lanes`](crate::host::HostBuilder::call_lanes) wins.
    pub const SWITCHBOARD_CALL_LANES: &'static str = "SWITCHBOARD_CALL_LANES";
    /// Log filter of the `switchboard` binary (`warn` by default; e.g. `info`,
    /// `switchboard::server=debug` for servers' stderr and log messages).
    pub const SWITCHBOARD_LOG: &'static str = "SWITCHBOARD_LOG";
    /// The gateway's bearer token (`switchboard serve --http`), instead of the stored one.
    pub const SWITCHBOARD_GATEWAY_TOKEN: &'static str = "SWITCHBOARD_GATEWAY_TOKEN";
    /// The MCP Registry's base URL (default `https://registry.modelcontextprotocol.io`; the
    /// user file's `registryUrl` otherwise).
    pub const SWITCHBOARD_REGISTRY_URL: &'static str = "SWITCHBOARD_REGISTRY_URL";
    /// Set and not empty: the `switchboard console` shows no colours (<https://no-color.org>).
    pub const NO_COLOR: &'static str = "NO_COLOR";
    /// The usual Rust log filter, used by the binary when `SWITCHBOARD_LOG` is not set.
    pub const RUST_LOG: &'static str = "RUST_LOG";
    /// The user configuration's base directory (default `~/.config`).
    pub const XDG_CONFIG_HOME: &'static str = "XDG_CONFIG_HOME";
    /// The state folder's base directory (default `~/.local/state`).
    pub const XDG_STATE_HOME: &'static str = "XDG_STATE_HOME";
    /// The user's home directory.
    pub const HOME: &'static str = "HOME";
    /// The user's home directory on Windows.
    pub const USERPROFILE: &'static str = "USERPROFILE";
    /// The configuration base directory on Windows (imports from other hosts).
    pub const APPDATA: &'static str = "APPDATA";
    /// Where stdio servers' and hooks' commands are looked up (a server entry's own `env`
    /// may set another).
    pub const PATH: &'static str = "PATH";
    /// The program the `switchboard` binary opens an authorization URL with (`mcp login`, the
    /// console); unset: `open` on macOS, `xdg-open` where [`DISPLAY`](Self::DISPLAY) or
    /// [`WAYLAND_DISPLAY`](Self::WAYLAND_DISPLAY) is set, else only the printed URL.
    pub const BROWSER: &'static str = "BROWSER";
    /// An X11 display: without [`BROWSER`](Self::BROWSER), the binary opens URLs with
    /// `xdg-open` only when this or [`WAYLAND_DISPLAY`](Self::WAYLAND_DISPLAY) is set.
    pub const DISPLAY: &'static str = "DISPLAY";
    /// A Wayland display: as [`DISPLAY`](Self::DISPLAY).
    pub const WAYLAND_DISPLAY: &'static str = "WAYLAND_DISPLAY";
    /// A PEM file of trusted roots replacing the system's, for bundle signatures (read by
    /// `rustls-native-certs`).
    pub const SSL_CERT_FILE: &'static str = "SSL_CERT_FILE";
    /// Folders of trusted roots replacing the system's, for bundle signatures (read by
    /// `rustls-native-certs`).
    pub const SSL_CERT_DIR: &'static str = "SSL_CERT_DIR";
    /// Set by the completion scripts `switchboard completions` prints: set to a shell (`bash`,
    /// `zsh`, `fish`; not empty, not `0`), the binary answers with completions and exits,
    /// whatever its arguments.
    pub const COMPLETE: &'static str = "COMPLETE";
    /// Codex's folder: `switchboard mcp import --from codex` reads its `config.toml` there
    /// (default `~/.codex`).
    pub const CODEX_HOME: &'static str = "CODEX_HOME";
}

/// A variable that is set but cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("environment variable {name}={value:?} is not valid: expected {expected}")]
pub struct EnvVarError {
    /// The variable.
    pub name: &'static str,
    /// Its value.
    pub value: String,
    /// What it should be, e.g. "a positive whole number".
    pub expected: &'static str,
}

const DAY_SECS: u64 = 24 * 60 * 60;

/// Time and size limits, from the environment or their defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// How long a server gets to connect ([`EnvVars::MCP_TIMEOUT`]).
    pub connect_timeout: Duration,
    /// How long a tool call may take ([`EnvVars::MCP_TOOL_TIMEOUT`]).
    pub tool_timeout: Duration,
    /// The token budget of one result ([`EnvVars::MAX_MCP_OUTPUT_TOKENS`]).
    pub max_output_tokens: u64,
    /// A result above this many tokens is logged as large.
    pub warn_output_tokens: u64,
    /// How many local servers connect at once
    /// ([`EnvVars::MCP_SERVER_CONNECTION_BATCH_SIZE`]).
    pub local_connect_concurrency: usize,
    /// How many remote servers connect at once
    /// ([`EnvVars::MCP_REMOTE_SERVER_CONNECTION_BATCH_SIZE`]).
    pub remote_connect_concurrency: usize,
    /// Output files (large results, binaries) older than this are removed at start.
    pub output_max_age: Duration,
    /// The most bytes one message from a server may have (every transport).
    pub max_message_bytes: usize,
    /// Whether calls take the host's own call lanes ([`EnvVars::SWITCHBOARD_CALL_LANES`]).
    pub call_lanes: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            connect_timeout: Duration::from_secs(30),
            tool_timeout: Duration::from_millis(100_000_000),
            max_output_tokens: 25_000,
            warn_output_tokens: 10_000,
            local_connect_concurrency: 3,
            remote_connect_concurrency: 20,
            output_max_age: Duration::from_secs(7 * DAY_SECS),
            max_message_bytes: 64 * 1024 * 1024,
            call_lanes: true,
        }
    }
}

impl Limits {
    /// Reads the overrides; an unset or empty variable keeps the default, a malformed one is
    /// an error naming it (a typo must not silently become "no timeout").
    pub fn from_env(env: &Environment) -> Result<Limits, EnvVarError> {
        let d = Limits::default();
        let millis = |name| positive(env, name).map(|v| v.map(Duration::from_millis));
        let count =
            |name| positive(env, name).map(|v| v.map(|v| usize::try_from(v).unwrap_or(usize::MAX)));
        Ok(Limits {
            connect_timeout: millis(EnvVars::MCP_TIMEOUT)?.unwrap_or(d.connect_timeout),
            tool_timeout: millis(EnvVars::MCP_TOOL_TIMEOUT)?.unwrap_or(d.tool_timeout),
            max_output_tokens: positive(env, EnvVars::MAX_MCP_OUTPUT_TOKENS)?
                .unwrap_or(d.max_output_tokens),
            warn_output_tokens: d.warn_output_tokens,
            local_connect_concurrency: count(EnvVars::MCP_SERVER_CONNECTION_BATCH_SIZE)?
                .unwrap_or(d.local_connect_concurrency),
            remote_connect_concurrency: count(EnvVars::MCP_REMOTE_SERVER_CONNECTION_BATCH_SIZE)?
                .unwrap_or(d.remote_connect_concurrency),
            output_max_age: positive(env, EnvVars::SWITCHBOARD_OUTPUT_MAX_AGE_DAYS)?
                .map(|days| Duration::from_secs(days.saturating_mul(DAY_SECS)))
                .unwrap_or(d.output_max_age),
            max_message_bytes: count(EnvVars::SWITCHBOARD_MAX_MESSAGE_BYTES)?
                .unwrap_or(d.max_message_bytes),
            call_lanes: switch(env, EnvVars::SWITCHBOARD_CALL_LANES)?.unwrap_or(d.call_lanes),
        })
    }
}

/// `on` or `off` (also `1`/`0`, `true`/`false`); unset or empty: `None`.
fn switch(env: &Environment, name: &'static str) -> Result<Option<bool>, EnvVarError> {
    match env.get(name).map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => match v.to_ascii_lowercase().as_str() {
            "on" | "1" | "true" => Ok(Some(true)),
            "off" | "0" | "false" => Ok(Some(false)),
            _ => Err(EnvVarError {
                name,
                value: v.to_owned(),
                expected: "`on` or `off`",
            }),
        },
    }
}

fn positive(env: &Environment, name: &'static str) -> Result<Option<u64>, EnvVarError> {
    match env.get(name).map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => v
            .parse::<u64>()
            .ok()
            .filter(|n| *n > 0)
            .map(Some)
            .ok_or_else(|| EnvVarError {
                name,
                value: v.to_owned(),
                expected: "a positive whole number",
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        assert_eq!(
            Limits::from_env(&Environment::default()).unwrap(),
            Limits::default()
        );
        let env: Environment = [
            ("MCP_TIMEOUT", "5000"),
            ("MCP_TOOL_TIMEOUT", "60000"),
            ("MAX_MCP_OUTPUT_TOKENS", "1000"),
            ("SWITCHBOARD_MAX_MESSAGE_BYTES", "4096"),
        ]
        .into_iter()
        .collect();
        let limits = Limits::from_env(&env).unwrap();
        assert_eq!(limits.connect_timeout, Duration::from_secs(5));
        assert_eq!(limits.tool_timeout, Duration::from_secs(60));
        assert_eq!(limits.max_output_tokens, 1000);
        assert_eq!(limits.max_message_bytes, 4096);
    }

    #[test]
    fn a_malformed_value_is_an_error_naming_the_variable() {
        let env: Environment = [("MCP_TIMEOUT", "30s")].into_iter().collect();
        let err = Limits::from_env(&env).unwrap_err();
        assert_eq!(
            err.to_string(),
            "environment variable MCP_TIMEOUT=\"30s\" is not valid: expected a positive whole number"
        );
    }
}
