//! Configuration: which MCP servers exist, where each was defined, and whether it may start.
//!
//! The module owns everything that happens before a server is started: finding the files of
//! every scope ([`ConfigPaths`]), parsing them with positions so every problem names the file,
//! line, server and field ([`ConfigIssue`]), expanding `${VAR}` references, merging scopes by
//! precedence, applying managed policy and project approvals ([`ConfigSet`]), and editing files
//! without disturbing a byte outside the entry that changes ([`ConfigEdit`]).

// A `ConfigIssue` carries file, position, server, field and hint; it travels only on the cold
// path of reading configuration once, so boxing it would buy nothing.
#![allow(clippy::result_large_err)]

mod approval;
pub mod bundle;
mod de;
mod edit;
mod expand;
mod gateway;
mod issue;
pub(crate) mod json;
mod load;
mod lock;
mod name;
mod parse;
mod paths;
mod plugin;
mod policy;
mod profiles;
pub(crate) mod settings;
mod trust;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

pub use approval::{Approval, ApprovalStore, Decision};
pub(crate) use edit::create_private_dir;
pub use edit::{ConfigEdit, ServersLocation};
pub(crate) use lock::FileLock;

/// Writes a file owner-only and atomically (for state that may matter to security).
pub(crate) fn write_private(path: &std::path::Path, contents: &[u8]) -> std::io::Result<()> {
    edit::write_atomic(path, contents, 0o600)
}
pub use crate::environment::Environment;
pub use expand::{ExpandError, expand_vars};
pub use gateway::{GatewayRateLimit, GatewaySettings, GatewayToolRule};
pub use issue::{ConfigError, ConfigIssue, Severity};
pub use load::{ConfigSet, EntryStatus, ServerEntry};
pub use name::{MAX_SERVER_NAME, NameError, ServerName};
pub use parse::{TRANSPORT_TYPES, entry_hash, parse_entry_value};
pub use paths::ConfigPaths;
pub use plugin::{
    MANIFEST, MARKETPLACE, MarketplaceInfo, PluginInfo, add_marketplace, add_plugin, fetch_plugin,
    list_marketplaces, plugin_data_dir, plugin_server_name, remove_marketplace, remove_plugin,
    set_plugin_enabled, set_plugin_server_enabled, update_plugin,
};
pub use policy::{Policy, PolicyRule, PolicyVerdict};
pub use profiles::{Profile, Profiles};
pub use settings::ScopeSettings;
pub use trust::TrustStore;

/// Where a server entry came from. Precedence rises in declaration order: a `Local` entry
/// overrides a `Project` entry of the same name, and a `Managed` entry overrides all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// `$XDG_CONFIG_HOME/switchboard/mcp.json`: the user's own servers, every project.
    User,
    /// `.mcp.json` at the project root (shared through the repository; needs approval).
    Project,
    /// The user's private entries for one project, kept in the user's config directory.
    Local,
    /// `--mcp-config` files and entries the embedding program adds for this run.
    Dynamic,
    /// The administrator's file; its policy applies to every other scope.
    Managed,
}

impl Scope {
    /// Scopes a user can write with `switchboard mcp add --scope`.
    pub const WRITABLE: [Scope; 3] = [Scope::Local, Scope::Project, Scope::User];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
            Scope::Local => "local",
            Scope::Dynamic => "dynamic",
            Scope::Managed => "managed",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The scope and file an entry was read from (`file` is `None` for entries the embedding
/// program added in code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub scope: Scope,
    pub file: Option<PathBuf>,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{} ({})", self.scope, file.display()),
            None => write!(f, "{} (added by the program)", self.scope),
        }
    }
}

/// A fingerprint of an entry's definition as written (before `${VAR}` expansion): the
/// connection cache and project approvals are keyed by it, so an edit is noticed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConfigHash(pub String);

impl fmt::Display for ConfigHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One server's configuration, checked and with every `${VAR}` expanded: what the connection
/// layer needs to start it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    pub name: ServerName,
    pub origin: Origin,
    pub hash: ConfigHash,
    pub transport: Transport,
    pub disabled: bool,
    /// Start-up fails when this server fails to connect.
    pub required: bool,
    /// `alwaysLoad`: the gateway's tool search mode lists this server's tools from the start
    /// (they are not only found by a search).
    pub always_load: bool,
    /// Overrides the connect timeout (`MCP_TIMEOUT`) for this server.
    pub connect_timeout: Option<Duration>,
    /// Overrides the tool-call timeout (`MCP_TOOL_TIMEOUT`) for this server.
    pub tool_timeout: Option<Duration>,
    pub protocol: ProtocolPin,
    pub restart: RestartPolicy,
    /// `startup`: whether the server starts with the host or when something needs it.
    pub startup: Startup,
    /// `idleTimeout` (seconds): a server with no request in flight for this long is stopped
    /// and goes back to lazy.
    pub idle_timeout: Option<Duration>,
    /// A fingerprint of what the server is launched with (the entry without the keys that
    /// only say when or how it is used): its kept lists are bound to it.
    pub launch_hash: ConfigHash,
    /// Glob patterns of tool names to keep (`None`: all).
    pub enabled_tools: Option<Vec<String>>,
    /// Glob patterns of tool names to hide.
    pub disabled_tools: Vec<String>,
    /// Glob patterns of tool names the profile in use offers (`None`: no profile, or one
    /// that offers every tool of its servers): a tool must match one, and `enabled_tools`.
    pub profile_tools: Option<Vec<String>>,
    /// Overrides `MAX_MCP_OUTPUT_TOKENS` for this server's results.
    pub max_output_tokens: Option<u64>,
    /// The log level asked of the server (`logLevel`: `debug` … `emergency`), sent with
    /// `logging/setLevel` to an initialize-era server that offers logging.
    pub log_level: Option<String>,
    /// `pinning`: whether the server's tools are pinned (`None`: the user's default, on).
    pub pinning: Option<bool>,
    /// `scanOnPin`: whether a tool the scan finds something of high severity in is held
    /// rather than pinned on first sight (`None`: the user's default, off).
    pub scan_on_pin: Option<bool>,
    /// Keys Switchboard does not know, kept as written (another host may own them).
    pub extra: BTreeMap<String, serde_json::Value>,
}

impl ServerConfig {
    /// An in-process server (`"type": "sdk"`) the embedding program adds in code.
    pub fn in_process(name: ServerName) -> ServerConfig {
        let raw = serde_json::json!({"type": "sdk"});
        ServerConfig {
            name,
            origin: Origin {
                scope: Scope::Dynamic,
                file: None,
            },
            hash: parse::entry_hash(&raw),
            transport: Transport::Sdk,
            disabled: false,
            required: false,
            always_load: false,
            connect_timeout: None,
            tool_timeout: None,
            protocol: ProtocolPin::Auto,
            restart: RestartPolicy::Never,
            startup: Startup::Eager,
            idle_timeout: None,
            launch_hash: parse::launch_hash(&raw),
            enabled_tools: None,
            disabled_tools: Vec::new(),
            profile_tools: None,
            max_output_tokens: None,
            log_level: None,
            pinning: None,
            scan_on_pin: None,
            extra: BTreeMap::new(),
        }
    }

    /// Whether this server runs on this machine as a child process (it counts against the
    /// local connection limit, not the remote one).
    pub fn is_local(&self) -> bool {
        matches!(self.transport, Transport::Stdio(_) | Transport::Sdk)
    }
}

/// How to reach a server: one variant per transport type.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Transport {
    /// A child process speaking JSON-RPC lines on stdin/stdout (`"type": "stdio"`).
    Stdio(StdioTransport),
    /// Streamable HTTP (`"type": "http"`).
    Http(RemoteTransport),
    /// The legacy 2024-11-05 HTTP+SSE transport (`"type": "sse"`).
    Sse(RemoteTransport),
    /// WebSocket with subprotocol `mcp` (`"type": "ws"`).
    WebSocket(RemoteTransport),
    /// An IDE's local SSE endpoint; the token comes from the IDE's lock file (`"sse-ide"`).
    SseIde(IdeTransport),
    /// An IDE's local WebSocket endpoint (`"ws-ide"`).
    WsIde(IdeTransport),
    /// A server implemented in the embedding program and registered in code (`"sdk"`).
    Sdk,
    /// Streamable HTTP with a bearer token from a provider, one retry after a 401 (`"proxy"`).
    Proxy(ProxyTransport),
}

impl Transport {
    /// A server reached over the network (not a child process, not in this process).
    pub fn is_remote(&self) -> bool {
        !matches!(self, Transport::Stdio(_) | Transport::Sdk)
    }

    /// The remote endpoint of a transport that logs in with OAuth (`http` and `sse`), as the
    /// seeds' host authenticates both.
    pub fn oauth_remote(&self) -> Option<&RemoteTransport> {
        match self {
            Transport::Http(remote) | Transport::Sse(remote) => Some(remote),
            _ => None,
        }
    }

    /// The `type` value this transport is written as.
    pub fn type_name(&self) -> &'static str {
        match self {
            Transport::Stdio(_) => "stdio",
            Transport::Http(_) => "http",
            Transport::Sse(_) => "sse",
            Transport::WebSocket(_) => "ws",
            Transport::SseIde(_) => "sse-ide",
            Transport::WsIde(_) => "ws-ide",
            Transport::Sdk => "sdk",
            Transport::Proxy(_) => "proxy",
        }
    }

    /// A one-line description of the target: the command line or the URL.
    pub fn target(&self) -> String {
        match self {
            Transport::Stdio(s) => {
                let mut line = s.command.clone();
                for arg in &s.args {
                    line.push(' ');
                    line.push_str(arg);
                }
                line
            }
            Transport::Http(r) | Transport::Sse(r) | Transport::WebSocket(r) => r.url.to_string(),
            Transport::SseIde(i) | Transport::WsIde(i) => i.url.to_string(),
            Transport::Proxy(p) => p.url.to_string(),
            Transport::Sdk => "in-process".to_owned(),
        }
    }
}

#[derive(Clone, PartialEq, Eq)]
pub struct StdioTransport {
    pub command: String,
    pub args: Vec<String>,
    /// Merged over the parent's environment when the child starts.
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
}

#[derive(Clone, PartialEq, Eq)]
pub struct RemoteTransport {
    pub url: url::Url,
    pub headers: BTreeMap<String, String>,
    pub oauth: Option<OAuthConfig>,
    /// `headersHelper`: a shell command whose stdout, a JSON object of strings, gives headers
    /// merged over `headers`; run at connect and again after a 401 or 403.
    pub headers_helper: Option<String>,
    /// `"credentials": "per-user"`: a program that serves several people (the gateway) keeps
    /// this server's OAuth tokens per caller, and calls it with the caller's own; `false`
    /// (`"shared"`, the default): one login serves every caller.
    pub per_user: bool,
}

/// The names of a map's entries, their values hidden: environment values and headers hold
/// secrets once `${VAR}` is expanded, and `{:?}` of a config reaches logs and panics.
struct HiddenValues<'a>(&'a BTreeMap<String, String>);

impl fmt::Debug for HiddenValues<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|k| (k, crate::redact::MASK)))
            .finish()
    }
}

impl fmt::Debug for StdioTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioTransport")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &HiddenValues(&self.env))
            .field("cwd", &self.cwd)
            .finish()
    }
}

impl fmt::Debug for RemoteTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteTransport")
            .field("url", &crate::redact::redact_url(self.url.as_str()))
            .field("headers", &HiddenValues(&self.headers))
            .field("oauth", &self.oauth)
            .field("per_user", &self.per_user)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for ProxyTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyTransport")
            .field("url", &crate::redact::redact_url(self.url.as_str()))
            .field("headers", &HiddenValues(&self.headers))
            .field("token", &self.token)
            .finish()
    }
}

/// What the user pre-configured for OAuth; the rest is discovered from the server.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OAuthConfig {
    pub client_id: Option<String>,
    /// Name of the environment variable holding a pre-registered client's secret.
    pub client_secret_env: Option<String>,
    /// The account of a keychain entry (service `switchboard`) holding that secret.
    pub client_secret_keychain: Option<String>,
    pub callback_port: Option<u16>,
    pub scopes: Vec<String>,
    /// `grantType: "client_credentials"`: a machine-to-machine client, no user and no browser.
    pub client_credentials: bool,
    /// A Client ID Metadata Document URL used as the client id where the server supports it.
    pub client_metadata_url: Option<String>,
    /// Name of the environment variable holding a PKCS#8 PEM P-256 key: the client
    /// authenticates with a signed assertion (`private_key_jwt`, ES256) instead of a secret.
    pub private_key_env: Option<String>,
    /// `xaa: true`: Cross-App Access (enterprise-managed authorization) — the user's ID token
    /// from their identity provider is exchanged there for an identity assertion grant
    /// (ID-JAG), which the server's authorization server takes for an access token. No browser.
    pub xaa: bool,
    /// The identity provider's issuer (its token endpoint discovered from its metadata).
    pub idp_issuer: Option<String>,
    /// The identity provider's token endpoint, when given rather than discovered.
    pub idp_token_endpoint: Option<String>,
    /// This client's id at the identity provider.
    pub idp_client_id: Option<String>,
    /// Name of the environment variable holding the user's ID token from the identity provider.
    pub id_token_env: Option<String>,
    /// Name of the environment variable holding a JWT the workload's platform issued for the
    /// authorization server: workload identity federation, the jwt-bearer grant (RFC 7523)
    /// with it as the assertion. No browser.
    pub assertion_env: Option<String>,
    /// `tokenExchange: true` (with `"credentials": "per-user"`): each caller's own access
    /// token at the gateway is exchanged (RFC 8693) at the server's authorization server, which
    /// trusts the gateway's identity provider, for the caller's token there. No browser.
    pub token_exchange: bool,
    /// `authorizationEndpoint`: used instead of the discovered one, for an authorization
    /// server whose metadata is missing or wrong (some Entra tenants publish none).
    pub authorization_endpoint: Option<String>,
    /// `tokenEndpoint`: likewise. With both given, a server without any metadata works.
    pub token_endpoint: Option<String>,
    /// `resource`: the RFC 8707 `resource` parameter sent on authorization and token requests
    /// (`None`: the discovered one, the server's URL).
    pub resource: Option<OAuthResource>,
}

/// An entry's `oauth.resource`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OAuthResource {
    /// This value instead of the discovered one (an Entra application ID URI, say).
    Given(String),
    /// `false`: no `resource` parameter at all (authorization servers that refuse it).
    Omitted,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdeTransport {
    pub url: url::Url,
    pub ide_name: Option<String>,
    /// The lock file the IDE writes, holding the auth token sent as a header.
    pub lock_file: Option<PathBuf>,
}

#[derive(Clone, PartialEq, Eq)]
pub struct ProxyTransport {
    pub url: url::Url,
    pub headers: BTreeMap<String, String>,
    pub token: TokenSource,
}

/// Where a proxy's bearer token comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// Read from this environment variable at connect time.
    Env(String),
    /// Printed on stdout by this command (program and arguments).
    Command(Vec<String>),
    /// Supplied by the embedding program's token provider.
    Provider,
}

/// Which protocol generation to speak.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ProtocolPin {
    /// Probe with `server/discover` (2026-07-28), fall back to `initialize`; remember what answered.
    #[default]
    Auto,
    /// Always this protocol version.
    Version(String),
}

/// When a server starts (`startup`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Startup {
    /// With the host (the default).
    #[default]
    Eager,
    /// When something first needs it (a call, a read, a prompt); until then its catalogue
    /// comes from the lists kept on disk.
    Lazy,
}

/// What to do when a local server exits on its own: an entry's `"restart"`, written
/// `"never"` or `"on-failure"`. (A remote server whose connection drops is always reconnected
/// with the same backoff, whatever this says; a long-running host then keeps probing it once
/// a minute, see [`HostBuilder::one_shot`](crate::HostBuilder::one_shot).)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RestartPolicy {
    /// `"never"`, the default: stay `failed`, with the exit status and stderr tail as the
    /// cause (the seeds' behaviour for stdio servers). `switchboard mcp reconnect NAME` or
    /// [`Host::reconnect`](crate::Host::reconnect) starts it again.
    #[default]
    Never,
    /// `"on-failure"`: restart with the remote reconnect backoff (1, 2, 4, 8, 16 s; at most 5
    /// tries), each scheduled restart an event that carries why the server went
    /// ([`ServerEvent::Reconnecting`](crate::ServerEvent::Reconnecting)).
    OnFailure,
}

#[cfg(test)]
mod debug_tests {
    use super::*;

    /// `{:?}` of a checked config (logs, panics) names environment variables and headers but
    /// never shows their expanded values, nor secrets in a URL.
    #[test]
    fn debug_output_hides_expanded_secrets() {
        let env = BTreeMap::from([("API_KEY".to_owned(), "sk-live-env-secret".to_owned())]);
        let headers = BTreeMap::from([(
            "Authorization".to_owned(),
            "Bearer header-secret".to_owned(),
        )]);
        let stdio = StdioTransport {
            command: "srv".to_owned(),
            args: vec![],
            env,
            cwd: None,
        };
        let url = url::Url::parse("https://u:pw-secret@example.com/mcp?key=query-secret").unwrap();
        let remote = RemoteTransport {
            url: url.clone(),
            headers: headers.clone(),
            oauth: None,
            headers_helper: Some("echo '{\"X-Key\": \"helper-secret\"}'".to_owned()),
            per_user: false,
        };
        let proxy = ProxyTransport {
            url,
            headers,
            token: TokenSource::Provider,
        };
        let shown = format!("{stdio:?} {remote:?} {proxy:?}");
        for secret in [
            "sk-live-env-secret",
            "header-secret",
            "pw-secret",
            "query-secret",
        ] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        for name in ["API_KEY", "Authorization", "example.com"] {
            assert!(shown.contains(name), "{name} missing from {shown}");
        }
    }
}
