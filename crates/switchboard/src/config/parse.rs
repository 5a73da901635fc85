//! One `mcpServers` entry, checked field by field into a [`ServerConfig`].
//!
//! Every problem names the file, line, column, server and field. Keys Switchboard does not
//! know are kept (another host may have written them) and reported as warnings.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use jsonc_parser::ast;
use sha2::{Digest, Sha256};

use super::de;
use super::json::{Document, to_json};
use super::settings::{
    Count, Flag, Keyed, OAuthFile, Object, ServerFile, ServerObject, Spanned, Text, TextList,
    TextMap, TextOrOff,
};
use super::{
    ConfigHash, ConfigIssue, Environment, IdeTransport, OAuthConfig, Origin, ProtocolPin,
    ProxyTransport, RemoteTransport, RestartPolicy, Scope, ServerConfig, ServerName, Startup,
    StdioTransport, TokenSource, Transport, expand_vars,
};

/// The values `type` may take.
pub const TRANSPORT_TYPES: [&str; 8] = [
    "stdio", "http", "sse", "ws", "sse-ide", "ws-ide", "sdk", "proxy",
];

/// Protocol versions a server can be pinned to with `"protocol"`.
const PROTOCOL_VERSIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// The values `logLevel` may take (the MCP logging levels).
pub(crate) const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// The environment a project's or a plugin's entry may set: an allow rule. A name is allowed
/// when it is plain (`[A-Za-z][A-Za-z0-9_]*`) and, upper-cased as the OS or a program may read
/// it (`https_proxy`, `npm_config_registry`), is in none of the families below, each of which
/// lets whoever sets it choose what an interpreter, a package manager, the dynamic loader, the
/// TLS stack, a proxy, a shell, git or the user's home and config folders load. A repository
/// comes with its `.mcp.json`, a plugin with its folder: neither may choose them. `PATH` is
/// among them: with it, an approved `node` is whatever `node` the repository puts first;
/// `HOME` too: with it, the repository's `.gitconfig` is the one git reads.
///
/// Names refused whole.
const REFUSED_ENV: [&str; 63] = [
    // The command search path and the user's own folders.
    "PATH",
    "HOME",
    "USERPROFILE",
    "APPDATA",
    "LOCALAPPDATA",
    "TMPDIR",
    "TMP",
    "TEMP",
    "COMSPEC",
    "PATHEXT",
    // Shells and what they run.
    "SHELL",
    "ENV",
    "ZDOTDIR",
    "FPATH",
    "IFS",
    "PS4",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "BASHOPTS",
    // Programs other programs start.
    "VISUAL",
    "BROWSER",
    "LESSOPEN",
    "LESSCLOSE",
    // Class and library paths.
    "CLASSPATH",
    "GCONV_PATH",
    "LOCPATH",
    "NLSPATH",
    "GLIBC_TUNABLES",
    "HOSTALIASES",
    // Credentials and settings files that can name a command.
    "NETRC",
    "WGETRC",
    "GNUPGHOME",
    "KUBECONFIG",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "VIRTUAL_ENV",
    // Rust's and Go's toolchains (`cargo run`, `go run`).
    "RUSTC",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "GOFLAGS",
    "GOPROXY",
    "GONOPROXY",
    "GOPRIVATE",
    "GONOSUMDB",
    "GONOSUMCHECK",
    "GOSUMDB",
    "GOINSECURE",
    "GOPATH",
    "GOROOT",
    "GOBIN",
    "GOENV",
    "GOTOOLCHAIN",
    "GOEXPERIMENT",
    "GOCACHE",
    "GOMODCACHE",
    "GOWORK",
    "GOTMPDIR",
    // Windows' counterparts of the loader's and .NET's variables.
    "COR_ENABLE_PROFILING",
    "COR_PROFILER",
    "COR_PROFILER_PATH",
    // A proxy (the `*_PROXY` family is refused by its end).
    "PROXY",
];

/// Families refused by their start (upper-cased names).
const REFUSED_ENV_PREFIXES: [&str; 34] = [
    // The dynamic loader.
    "LD_",
    "DYLD_",
    // Interpreters and runtimes.
    "NODE_",
    "PYTHON",
    "PERL",
    "RUBY",
    "JAVA_",
    "JDK_",
    "DOTNET_",
    "CORECLR_",
    "COMPLUS_",
    "LUA_",
    "PHP",
    "DENO_",
    "BUN_",
    "CGO_",
    // Package managers.
    "NPM_CONFIG_",
    "YARN_",
    "COREPACK_",
    "PIP_",
    "UV_",
    "GEM_",
    "BUNDLE_",
    "CARGO_",
    "RUSTUP_",
    "DOCKER_",
    // TLS stacks and HTTP clients.
    "SSL_",
    "OPENSSL_",
    "CURL_",
    "REQUESTS_CA",
    // Shells, git, ssh and the user's config folders.
    "BASH_",
    "GIT_",
    "SSH_",
    "XDG_",
];

/// Families refused by their end (upper-cased names): `HTTPS_PROXY`, `GIT_EDITOR`,
/// `MANPAGER`, `SUDO_ASKPASS`.
const REFUSED_ENV_SUFFIXES: [&str; 4] = ["_PROXY", "EDITOR", "PAGER", "ASKPASS"];

/// Names inside a refused family that only change how a runtime reports, never what it loads.
const ALLOWED_IN_FAMILY: [&str; 6] = [
    "NODE_ENV",
    "NODE_NO_WARNINGS",
    "PYTHONUNBUFFERED",
    "PYTHONIOENCODING",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONUTF8",
];

/// Why a project's or a plugin's entry may not set a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RefusedEnv {
    /// Not `[A-Za-z][A-Za-z0-9_]*`.
    NotPlain,
    /// In a family that chooses what the process runs or loads.
    Family,
}

/// Whether `name` is plain: `[A-Za-z][A-Za-z0-9_]*`.
fn is_plain_env_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether the plain name `name` is in a refused family (compared upper-cased).
fn in_refused_env_family(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    let upper = upper.as_str();
    if ALLOWED_IN_FAMILY.contains(&upper) {
        return false;
    }
    REFUSED_ENV.contains(&upper)
        || REFUSED_ENV_PREFIXES.iter().any(|p| upper.starts_with(p))
        || REFUSED_ENV_SUFFIXES.iter().any(|s| upper.ends_with(s))
}

/// The allow rule for a project's or a plugin's entry: `None` when it may set `name`.
fn refused_env(name: &str) -> Option<RefusedEnv> {
    if !is_plain_env_name(name) {
        Some(RefusedEnv::NotPlain)
    } else if in_refused_env_family(name) {
        Some(RefusedEnv::Family)
    } else {
        None
    }
}

/// Shells whose `-c` script could set a variable the `env` list refuses.
const SHELLS: [&str; 7] = ["sh", "bash", "dash", "zsh", "ksh", "ash", "fish"];

/// The file name of a command (`/usr/bin/env` → `env`).
fn command_base(command: &str) -> &str {
    command.rsplit('/').next().unwrap_or(command)
}

/// The names of refused variables a shell script assigns or exports (a word before `=` that
/// is no plain name is no assignment: `--port=3000`).
fn assigned_hijacking_var(text: &str) -> Option<&str> {
    text.split(|c: char| c.is_whitespace() || c == ';' || c == '&' || c == '|')
        .filter_map(|word| word.split_once('=').map(|(name, _)| name))
        .find(|name| is_plain_env_name(name) && in_refused_env_family(name))
}

/// A bare command looked up in the user's own `PATH` (absolute directories only: a relative
/// entry would resolve inside the repository). `None` when it is not found.
fn resolve_on_path(command: &str, env: &Environment) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    if command.contains('/') {
        return None;
    }
    let path = env.get("PATH")?;
    path.split(':')
        .filter(|dir| dir.starts_with('/'))
        .map(|dir| std::path::Path::new(dir).join(command))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .map(|p| p.display().to_string())
}

/// The keys that belong to one transport (every other key of [`ServerFile`] applies to all):
/// another transport's key is kept as written and warned about.
pub(crate) fn fields_of(kind: &str) -> &'static [&'static str] {
    match kind {
        "stdio" => &["command", "args", "env", "cwd"],
        "http" | "sse" => &["url", "headers", "oauth", "headersHelper", "credentials"],
        "ws" => &["url", "headers", "headersHelper"],
        "sse-ide" | "ws-ide" => &["url", "ideName", "lockFile"],
        // `id`: the seeds' host's claude.ai proxy server id (`claudeai-proxy`); kept, unused.
        "proxy" => &["url", "headers", "tokenEnv", "tokenCommand", "id"],
        _ => &[],
    }
}

/// The outcome of checking one entry.
#[derive(Debug)]
pub(crate) struct ParsedEntry {
    pub(crate) config: Result<ServerConfig, ConfigIssue>,
    pub(crate) warnings: Vec<ConfigIssue>,
    pub(crate) raw: serde_json::Value,
    pub(crate) hash: ConfigHash,
}

/// The fingerprint of an entry as written: SHA-256 of its canonical JSON (keys sorted).
pub fn entry_hash(raw: &serde_json::Value) -> ConfigHash {
    let mut canonical = String::new();
    write_canonical(raw, &mut canonical);
    let digest = Sha256::digest(canonical.as_bytes());
    ConfigHash(hex::encode(digest))
}

/// Keys that say when or how a server is used, not what is launched: a change of one keeps
/// the server's kept lists (tool filters apply to the lists when they are read).
const NOT_LAUNCH_KEYS: [&str; 13] = [
    "startup",
    "idleTimeout",
    "disabled",
    "required",
    "alwaysLoad",
    "description",
    "enabledTools",
    "disabledTools",
    "maxOutputTokens",
    "toolTimeout",
    "restart",
    "pinning",
    "scanOnPin",
];

/// The hash of an entry's launch-relevant keys ([`ServerConfig::launch_hash`]).
pub(crate) fn launch_hash(raw: &serde_json::Value) -> ConfigHash {
    let mut raw = raw.clone();
    if let Some(map) = raw.as_object_mut() {
        for key in NOT_LAUNCH_KEYS {
            map.remove(key);
        }
    }
    entry_hash(&raw)
}

/// An entry's hash bound to the program it runs (an approval of a resolved command).
pub(crate) fn bound_hash(hash: &ConfigHash, command: &str) -> ConfigHash {
    let digest = Sha256::digest(format!("{}\0{command}", hash.0).as_bytes());
    ConfigHash(hex::encode(digest))
}

fn write_canonical(value: &serde_json::Value, out: &mut String) {
    match value {
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        serde_json::Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Checks one entry given as JSON (from `add-json`, an import, or the embedding program).
/// `label` stands in for a file name in messages.
pub fn parse_entry_value(
    name: &str,
    entry: &serde_json::Value,
    origin: Origin,
    env: &Environment,
    label: &str,
) -> Result<(ServerConfig, Vec<ConfigIssue>), ConfigIssue> {
    let text = serde_json::to_string_pretty(entry).unwrap_or_default();
    let doc = Document::new(PathBuf::from(label), text);
    let value = doc
        .parse()?
        .ok_or_else(|| ConfigIssue::error("empty entry").server(name))?;
    let parsed = parse_entry(&doc, name, (1, 1), &value, origin, env, false);
    parsed.config.map(|config| (config, parsed.warnings))
}

pub(crate) fn parse_entry(
    doc: &Document,
    name: &str,
    name_position: (usize, usize),
    value: &ast::Value<'_>,
    origin: Origin,
    env: &Environment,
    plugin: bool,
) -> ParsedEntry {
    let raw = to_json(value);
    let hash = entry_hash(&raw);
    let mut warnings = Vec::new();
    let config = match check_name(doc, name, name_position) {
        Err(issue) => Err(issue),
        Ok(server_name) => match de::from_ast::<Spanned<ServerObject>>(doc, value, "") {
            Err(e) => Err(e.issue(&doc.path).server(name)),
            Ok(read) => {
                let walker = Walker {
                    doc,
                    server: name,
                    env,
                    errors: &read.errors,
                    unknown: &read.unknown,
                    at: read.value.offset,
                    plugin,
                };
                let entry = &read.value.value.0;
                walker.entry(
                    server_name,
                    entry,
                    &raw,
                    &mut warnings,
                    origin,
                    hash.clone(),
                )
            }
        },
    };
    ParsedEntry {
        config,
        warnings,
        raw,
        hash,
    }
}

fn check_name(
    doc: &Document,
    name: &str,
    name_position: (usize, usize),
) -> Result<ServerName, ConfigIssue> {
    ServerName::new(name).map_err(|e| {
        let issue = ConfigIssue::error(e.to_string())
            .in_file(&doc.path)
            .at(name_position)
            .server(name);
        match e.suggestion {
            Some(s) => issue.hint(format!("rename it, for example to `{s}`")),
            None => issue,
        }
    })
}

/// `env` and `headers` once read.
type Strings = BTreeMap<String, String>;

/// Checks one entry, read into a [`ServerFile`], field by field in a fixed order: the first
/// problem is the entry's.
struct Walker<'a> {
    doc: &'a Document,
    server: &'a str,
    env: &'a Environment,
    /// The problems of the entry's broken values, by field path.
    errors: &'a [de::Error],
    /// Keys the entry's structs do not declare.
    unknown: &'a [de::Unknown],
    /// Where the entry's object starts.
    at: usize,
    /// A plugin's entry: its environment is checked as a project's is, whatever its scope.
    plugin: bool,
}

impl Walker<'_> {
    fn issue_at(&self, offset: usize, field: &str, message: impl Into<String>) -> ConfigIssue {
        let issue = ConfigIssue::error(message)
            .in_file(&self.doc.path)
            .at(self.doc.position(offset))
            .server(self.server);
        if field.is_empty() {
            issue
        } else {
            issue.field(field)
        }
    }

    /// The problem of the broken value at `field`.
    fn broken(&self, field: &str) -> ConfigIssue {
        let under = |path: &str| {
            path.strip_prefix(field)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
        };
        match self.errors.iter().find(|e| under(e.field())) {
            Some(e) => e.issue(&self.doc.path).server(self.server),
            None => self.issue_at(self.at, field, "cannot be read"),
        }
    }

    /// A field's value and where it starts: `None` when absent, its problem when broken.
    fn get<'f, T>(
        &self,
        value: &'f Keyed<T>,
        field: &str,
    ) -> Result<Option<(&'f T, usize)>, ConfigIssue> {
        match value {
            Keyed::Absent => Ok(None),
            Keyed::Present {
                value: Some(value),
                offset,
                ..
            } => Ok(Some((value, *offset))),
            Keyed::Present { value: None, .. } => Err(self.broken(field)),
        }
    }

    fn string(&self, value: &Keyed<Text>, field: &str) -> Result<Option<String>, ConfigIssue> {
        Ok(self.get(value, field)?.map(|(text, _)| text.0.clone()))
    }

    fn entry(
        &self,
        name: ServerName,
        entry: &ServerFile,
        raw: &serde_json::Value,
        warnings: &mut Vec<ConfigIssue>,
        origin: Origin,
        hash: ConfigHash,
    ) -> Result<ServerConfig, ConfigIssue> {
        let kind = self.kind(entry)?;
        // Keys kept as written and ignored: unknown ones, and another transport's.
        let mut ignored: Vec<(usize, &str, &str)> = self
            .unknown
            .iter()
            .filter(|u| u.parent().is_empty())
            .map(|u| {
                (
                    u.offset,
                    u.key.as_str(),
                    "unknown field; kept as written and ignored",
                )
            })
            .collect();
        let mut elsewhere = String::new();
        for field in TRANSPORT_TYPES.into_iter().flat_map(fields_of) {
            if !fields_of(kind).contains(field)
                && let Some(key) = entry.written(field)
                && !ignored.iter().any(|(_, k, _)| k == field)
            {
                ignored.push((key, field, ""));
            }
        }
        if ignored.iter().any(|(_, _, m)| m.is_empty()) {
            elsewhere = format!("does not apply to type `{kind}`; ignored");
        }
        ignored.sort_by_key(|(at, _, _)| *at);
        let mut extra = BTreeMap::new();
        for (at, key, message) in ignored {
            let message = if message.is_empty() {
                elsewhere.as_str()
            } else {
                message
            };
            warnings.push(
                ConfigIssue::warning(message)
                    .in_file(&self.doc.path)
                    .at(self.doc.position(at))
                    .server(self.server)
                    .field(key),
            );
            if let Some(value) = raw.get(key) {
                extra.insert(key.to_owned(), value.clone());
            }
        }

        let transport = match kind {
            "stdio" => Transport::Stdio(self.stdio(entry, &origin)?),
            "http" => Transport::Http(self.remote(entry, kind, warnings)?),
            "sse" => Transport::Sse(self.remote(entry, kind, warnings)?),
            "ws" => Transport::WebSocket(self.remote(entry, kind, warnings)?),
            "sse-ide" => Transport::SseIde(self.ide(entry, kind)?),
            "ws-ide" => Transport::WsIde(self.ide(entry, kind)?),
            "proxy" => Transport::Proxy(self.proxy(entry)?),
            _ => Transport::Sdk,
        };

        let protocol = match self.get(&entry.protocol, "protocol")? {
            None => ProtocolPin::Auto,
            Some((Text(v), at)) => match v.as_str() {
                "auto" => ProtocolPin::Auto,
                v if PROTOCOL_VERSIONS.contains(&v) => ProtocolPin::Version(v.to_owned()),
                v => {
                    return Err(self.issue_at(
                        at,
                        "protocol",
                        format!(
                            "unknown protocol `{v}`; use `auto` or one of {}",
                            PROTOCOL_VERSIONS.join(", ")
                        ),
                    ));
                }
            },
        };
        let restart = match self.get(&entry.restart, "restart")? {
            None => RestartPolicy::Never,
            Some((Text(v), at)) => match v.as_str() {
                "never" => RestartPolicy::Never,
                "on-failure" => RestartPolicy::OnFailure,
                v => {
                    return Err(self.issue_at(
                        at,
                        "restart",
                        format!("unknown restart policy `{v}`; use `never` or `on-failure`"),
                    ));
                }
            },
        };
        let startup = match self.get(&entry.startup, "startup")? {
            None => Startup::Eager,
            Some((Text(v), at)) => match v.as_str() {
                "eager" => Startup::Eager,
                "lazy" => Startup::Lazy,
                v => {
                    return Err(self.issue_at(
                        at,
                        "startup",
                        format!("unknown startup `{v}`; use `eager` or `lazy`"),
                    ));
                }
            },
        };
        let log_level = match self.get(&entry.log_level, "logLevel")? {
            None => None,
            Some((Text(level), at)) => {
                if !LOG_LEVELS.contains(&level.as_str()) {
                    return Err(self.issue_at(
                        at,
                        "logLevel",
                        format!(
                            "unknown log level `{level}`; use one of {}",
                            LOG_LEVELS.join(", ")
                        ),
                    ));
                }
                Some(level.clone())
            }
        };

        Ok(ServerConfig {
            name,
            origin,
            hash,
            transport,
            disabled: self.flag(&entry.disabled, "disabled")?,
            required: self.flag(&entry.required, "required")?,
            always_load: self.flag(&entry.always_load, "alwaysLoad")?,
            connect_timeout: self.millis(&entry.timeout, "timeout")?,
            tool_timeout: self.millis(&entry.tool_timeout, "toolTimeout")?,
            protocol,
            restart,
            startup,
            idle_timeout: self
                .positive_int(&entry.idle_timeout, "idleTimeout")?
                .map(Duration::from_secs),
            launch_hash: launch_hash(raw),
            enabled_tools: self.string_list(&entry.enabled_tools, "enabledTools", false)?,
            disabled_tools: self
                .string_list(&entry.disabled_tools, "disabledTools", false)?
                .unwrap_or_default(),
            profile_tools: None,
            max_output_tokens: self.positive_int(&entry.max_output_tokens, "maxOutputTokens")?,
            log_level,
            pinning: self.get(&entry.pinning, "pinning")?.map(|(Flag(b), _)| *b),
            scan_on_pin: self
                .get(&entry.scan_on_pin, "scanOnPin")?
                .map(|(Flag(b), _)| *b),
            extra,
        })
    }

    fn kind(&self, entry: &ServerFile) -> Result<&'static str, ConfigIssue> {
        if let Some((Text(written), at)) = self.get(&entry.kind, "type")? {
            let normalized = match written.as_str() {
                "streamable-http" | "streamableHttp" | "streamable_http" => "http",
                "websocket" => "ws",
                // What the seeds' host writes for a claude.ai proxy server: Streamable HTTP
                // with a bearer token and one retry after a 401, which is our `proxy`.
                "claudeai-proxy" => "proxy",
                other => other,
            };
            return TRANSPORT_TYPES
                .into_iter()
                .find(|t| *t == normalized)
                .ok_or_else(|| {
                    self.issue_at(
                        at,
                        "type",
                        format!(
                            "unknown type `{written}`; valid types: {}",
                            TRANSPORT_TYPES.join(", ")
                        ),
                    )
                });
        }
        match (entry.command.is_present(), entry.url.is_present()) {
            (true, true) => Err(self.issue_at(
                self.at,
                "",
                "has both `command` and `url`; set `type` to say which transport to use",
            )),
            (true, false) => Ok("stdio"),
            (false, true) => {
                let text = self.string(&entry.url, "url")?.unwrap_or_default();
                Ok(if text.starts_with("ws://") || text.starts_with("wss://") { "ws" } else { "http" })
            }
            (false, false) => Err(self
                .issue_at(self.at, "", "needs `command` (a local server) or `url` (a remote one)")
                .hint("for example {\"command\": \"npx\", \"args\": [\"-y\", \"@scope/server\"]} or {\"type\": \"http\", \"url\": \"https://host/mcp\"}")),
        }
    }

    fn stdio(&self, entry: &ServerFile, origin: &Origin) -> Result<StdioTransport, ConfigIssue> {
        let (command, at_command) = match self.get(&entry.command, "command")? {
            Some((Text(text), at)) => (self.expand_at(text, at, "command")?, at),
            None => {
                return Err(self.issue_at(self.at, "command", "type `stdio` needs `command`"));
            }
        };
        if command.trim().is_empty() {
            return Err(self.issue_at(at_command, "command", "is empty"));
        }
        let env = self
            .string_map(&entry.env, "env", true)?
            .map(|(env, _)| env)
            .unwrap_or_default();
        let args = self
            .string_list(&entry.args, "args", true)?
            .unwrap_or_default();
        let mut command = command;
        if origin.scope == Scope::Project || self.plugin {
            self.project_stdio_checks(entry, &command, &args, &env)?;
        }
        if origin.scope == Scope::Project {
            // What runs is bound now, against the user's own PATH: the approval shows it.
            if let Some(resolved) = resolve_on_path(&command, self.env) {
                command = resolved;
            }
        }
        Ok(StdioTransport {
            command,
            args,
            env,
            cwd: self.expanded(&entry.cwd, "cwd")?.map(PathBuf::from),
        })
    }

    /// What a repository (or a plugin) may not choose for a server it defines: variables the
    /// allow rule ([`refused_env`]) refuses, and the ways around it (`env VAR=… cmd`,
    /// `sh -c "VAR=… cmd"`).
    fn project_stdio_checks(
        &self,
        entry: &ServerFile,
        command: &str,
        args: &[String],
        env: &BTreeMap<String, String>,
    ) -> Result<(), ConfigIssue> {
        // Who defines the server, as the messages say it.
        let (file, who, one) = if self.plugin {
            ("a plugin's server", "the plugin", "a plugin")
        } else {
            ("a project's .mcp.json", "the repository", "a project")
        };
        let hint = if self.plugin {
            "define this server in your user or local scope instead, or ask the plugin's author"
        } else {
            "define this server in your user or local scope instead"
        };
        if let Some((key, why)) = env.keys().find_map(|k| refused_env(k).map(|why| (k, why))) {
            // Where the key is written (the last time, as the value read is the last).
            let at = match &entry.env {
                Keyed::Present {
                    value: Some(TextMap(entries)),
                    ..
                } => entries
                    .iter()
                    .rev()
                    .find(|(k, _)| k == key)
                    .and_then(|(_, v)| v.key),
                _ => None,
            }
            .unwrap_or(self.at);
            let message = match why {
                RefusedEnv::Family => format!(
                    "`{key}` may not be set from {file}: \
                     it would let {who} choose what the process runs"
                ),
                RefusedEnv::NotPlain => format!(
                    "`{key}` may not be set from {file}: \
                     only plain names (a letter, then letters, digits and `_`) may be"
                ),
            };
            return Err(self.issue_at(at, &format!("env.{key}"), message).hint(hint));
        }
        let at_command = match &entry.command {
            Keyed::Present { offset, .. } => *offset,
            Keyed::Absent => self.at,
        };
        let base = command_base(command.trim());
        if base == "env" {
            return Err(self
                .issue_at(
                    at_command,
                    "command",
                    format!(
                        "`env` may not be the command of {one}'s server: it could set \
                         variables {one} may not set; name the program itself"
                    ),
                )
                .hint(hint));
        }
        if SHELLS.contains(&base) {
            let at_args = match &entry.args {
                Keyed::Present { offset, .. } => *offset,
                Keyed::Absent => self.at,
            };
            for (i, arg) in args.iter().enumerate() {
                if let Some(var) = assigned_hijacking_var(arg) {
                    return Err(self
                        .issue_at(
                            at_args,
                            &format!("args[{i}]"),
                            format!(
                                "the shell script sets `{var}`, which {file} \
                                 may not set: it would let {who} choose what runs"
                            ),
                        )
                        .hint(hint));
                }
            }
        }
        Ok(())
    }

    fn remote(
        &self,
        entry: &ServerFile,
        kind: &str,
        warnings: &mut Vec<ConfigIssue>,
    ) -> Result<RemoteTransport, ConfigIssue> {
        let remote = RemoteTransport {
            url: self.url(entry, kind)?,
            headers: self.headers(entry)?,
            oauth: match self.get(&entry.oauth, "oauth")? {
                Some((Object(oauth), _)) => Some(self.oauth(oauth, warnings)?),
                None => None,
            },
            headers_helper: match self.get(&entry.headers_helper, "headersHelper")? {
                // Run by `sh -c` as written: the shell expands what it names.
                Some((Text(command), at)) if command.trim().is_empty() => {
                    return Err(self.issue_at(at, "headersHelper", "is empty"));
                }
                Some((Text(command), _)) => Some(command.clone()),
                None => None,
            },
            per_user: false,
        };
        self.credentials(entry, remote)
    }

    /// `credentials`: `shared` (the default) or `per-user`, which needs each caller's own
    /// OAuth login: no grant without a user, and no credential of the entry's own.
    fn credentials(
        &self,
        entry: &ServerFile,
        mut remote: RemoteTransport,
    ) -> Result<RemoteTransport, ConfigIssue> {
        let exchanges = remote.oauth.as_ref().is_some_and(|o| o.token_exchange);
        let Some((Text(value), at)) = self.get(&entry.credentials, "credentials")? else {
            if exchanges {
                return Err(self.issue_at(
                    entry.oauth.at().unwrap_or(self.at),
                    "oauth.tokenExchange",
                    "exchanges each caller's own token: it needs `\"credentials\": \"per-user\"`",
                ));
            }
            return Ok(remote);
        };
        remote.per_user = match value.as_str() {
            "shared" => false,
            "per-user" => true,
            other => {
                return Err(self.issue_at(
                    at,
                    "credentials",
                    format!("unknown credentials `{other}`; use `shared` or `per-user`"),
                ));
            }
        };
        if !remote.per_user {
            if exchanges {
                return Err(self.issue_at(
                    at,
                    "oauth.tokenExchange",
                    "exchanges each caller's own token: it needs `\"credentials\": \"per-user\"`",
                ));
            }
            return Ok(remote);
        }
        let oauth = remote.oauth.as_ref();
        if exchanges && oauth.is_none_or(|o| o.client_id.is_none()) {
            return Err(self.issue_at(
                entry.oauth.at().unwrap_or(at),
                "oauth.tokenExchange",
                "needs `oauth.clientId`: the client the server's authorization server knows the gateway as",
            ));
        }
        let without_user = if oauth.is_some_and(|o| o.client_credentials) {
            Some("`oauth.grantType: \"client_credentials\"`")
        } else if oauth.is_some_and(|o| o.xaa) {
            Some("`oauth.xaa`")
        } else if oauth.is_some_and(|o| o.assertion_env.is_some()) {
            Some("`oauth.assertionEnv`")
        } else if remote
            .headers
            .keys()
            .any(|k| k.trim().eq_ignore_ascii_case("authorization"))
        {
            Some("an `Authorization` header")
        } else if remote.headers_helper.is_some() {
            Some("`headersHelper`")
        } else {
            None
        };
        if let Some(what) = without_user {
            return Err(self.issue_at(
                at,
                "credentials",
                format!(
                    "`per-user` needs each caller's own OAuth login, and {what} gives one credential for everyone"
                ),
            ));
        }
        Ok(remote)
    }

    fn ide(&self, entry: &ServerFile, kind: &str) -> Result<IdeTransport, ConfigIssue> {
        Ok(IdeTransport {
            url: self.url(entry, kind)?,
            ide_name: self.string(&entry.ide_name, "ideName")?,
            lock_file: self
                .expanded(&entry.lock_file, "lockFile")?
                .map(PathBuf::from),
        })
    }

    fn proxy(&self, entry: &ServerFile) -> Result<ProxyTransport, ConfigIssue> {
        let token = match (&entry.token_env, &entry.token_command) {
            (Keyed::Present { .. }, Keyed::Absent) => TokenSource::Env(
                self.string(&entry.token_env, "tokenEnv")?
                    .unwrap_or_default(),
            ),
            (Keyed::Absent, Keyed::Present { offset, .. }) => {
                let argv = self
                    .string_list(&entry.token_command, "tokenCommand", true)?
                    .unwrap_or_default();
                if argv.is_empty() {
                    return Err(self.issue_at(*offset, "tokenCommand", "is empty"));
                }
                TokenSource::Command(argv)
            }
            (Keyed::Absent, Keyed::Absent) => TokenSource::Provider,
            (Keyed::Present { .. }, Keyed::Present { offset, key, .. }) => {
                return Err(self.issue_at(
                    key.unwrap_or(*offset),
                    "tokenCommand",
                    "set either `tokenEnv` or `tokenCommand`, not both",
                ));
            }
        };
        Ok(ProxyTransport {
            url: self.url(entry, "proxy")?,
            headers: self.headers(entry)?,
            token,
        })
    }

    fn url(&self, entry: &ServerFile, kind: &str) -> Result<url::Url, ConfigIssue> {
        let Some((Text(text), at)) = self.get(&entry.url, "url")? else {
            return Err(self.issue_at(self.at, "url", format!("type `{kind}` needs `url`")));
        };
        let text = self.expand_at(text, at, "url")?;
        let url = url::Url::parse(&text).map_err(|e| {
            let shown = crate::redact::redact_url(&text);
            self.issue_at(at, "url", format!("`{shown}` is not a valid URL: {e}"))
        })?;
        let schemes: &[&str] = if kind.starts_with("ws") {
            &["ws", "wss"]
        } else {
            &["http", "https"]
        };
        if !schemes.contains(&url.scheme()) {
            return Err(self.issue_at(
                at,
                "url",
                format!(
                    "type `{kind}` needs a {}:// or {}:// URL, found `{}://`",
                    schemes[0],
                    schemes[1],
                    url.scheme()
                ),
            ));
        }
        if url.host_str().is_none_or(str::is_empty) {
            let shown = crate::redact::redact_url(&text);
            return Err(self.issue_at(at, "url", format!("`{shown}` has no host")));
        }
        Ok(url)
    }

    fn headers(&self, entry: &ServerFile) -> Result<BTreeMap<String, String>, ConfigIssue> {
        let Some((headers, at)) = self.string_map(&entry.headers, "headers", true)? else {
            return Ok(BTreeMap::new());
        };
        for (name, value) in &headers {
            let valid_name = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            if !valid_name {
                return Err(self.issue_at(
                    at,
                    &format!("headers.{name}"),
                    "is not a valid HTTP header name",
                ));
            }
            if value.contains(['\r', '\n']) {
                return Err(self.issue_at(
                    at,
                    &format!("headers.{name}"),
                    "a header value may not contain a line break",
                ));
            }
        }
        Ok(headers)
    }

    /// `oauth`, checked in written order: the first problem, and the warnings before it.
    fn oauth(
        &self,
        file: &OAuthFile,
        warnings: &mut Vec<ConfigIssue>,
    ) -> Result<OAuthConfig, ConfigIssue> {
        let mut oauth = OAuthConfig::default();
        // Each key's outcome, placed where it is written.
        let mut checked: Vec<(usize, Result<(), ConfigIssue>)> = Vec::new();
        let mut check = |at: Option<usize>, result: Result<(), ConfigIssue>| {
            if let Some(at) = at {
                checked.push((at, result));
            }
        };
        let field = |name: &str| format!("oauth.{name}");
        check(
            file.client_id.at(),
            self.expanded(&file.client_id, &field("clientId"))
                .map(|v| oauth.client_id = v),
        );
        check(
            file.client_secret_env.at(),
            self.string(&file.client_secret_env, &field("clientSecretEnv"))
                .map(|v| oauth.client_secret_env = v),
        );
        check(
            file.client_secret_keychain.at(),
            self.string(&file.client_secret_keychain, &field("clientSecretKeychain"))
                .map(|v| oauth.client_secret_keychain = v),
        );
        check(
            file.callback_port.at(),
            self.positive_int(&file.callback_port, &field("callbackPort"))
                .and_then(|port| {
                    let Some(port) = port else { return Ok(()) };
                    let at = file.callback_port.at().unwrap_or(self.at);
                    oauth.callback_port = Some(u16::try_from(port).map_err(|_| {
                        self.issue_at(at, "oauth.callbackPort", "must be a port number (1-65535)")
                    })?);
                    Ok(())
                }),
        );
        check(
            file.scopes.at(),
            self.string_list(&file.scopes, &field("scopes"), false)
                .map(|v| oauth.scopes = v.unwrap_or_default()),
        );
        check(
            file.grant_type.at(),
            self.get(&file.grant_type, &field("grantType"))
                .and_then(|v| {
                    match v.map(|(Text(t), at)| (t.as_str(), at)) {
                        None => {}
                        Some(("client_credentials", _)) => oauth.client_credentials = true,
                        Some(("authorization_code", _)) => oauth.client_credentials = false,
                        Some((_, at)) => {
                            return Err(self.issue_at(
                                at,
                                "oauth.grantType",
                                "must be \"authorization_code\" or \"client_credentials\"",
                            ));
                        }
                    }
                    Ok(())
                }),
        );
        check(
            file.private_key_env.at(),
            self.string(&file.private_key_env, &field("privateKeyEnv"))
                .map(|v| oauth.private_key_env = v),
        );
        check(
            file.xaa.at(),
            self.flag(&file.xaa, &field("xaa")).map(|v| oauth.xaa = v),
        );
        check(
            file.idp_issuer.at(),
            self.idp_url(&file.idp_issuer, &field("idpIssuer"))
                .map(|v| oauth.idp_issuer = v),
        );
        check(
            file.idp_token_endpoint.at(),
            self.idp_url(&file.idp_token_endpoint, &field("idpTokenEndpoint"))
                .map(|v| oauth.idp_token_endpoint = v),
        );
        check(
            file.idp_client_id.at(),
            self.expanded(&file.idp_client_id, &field("idpClientId"))
                .map(|v| oauth.idp_client_id = v),
        );
        check(
            file.id_token_env.at(),
            self.string(&file.id_token_env, &field("idTokenEnv"))
                .map(|v| oauth.id_token_env = v),
        );
        check(
            file.assertion_env.at(),
            self.string(&file.assertion_env, &field("assertionEnv"))
                .map(|v| oauth.assertion_env = v),
        );
        check(
            file.token_exchange.at(),
            self.flag(&file.token_exchange, &field("tokenExchange"))
                .map(|v| oauth.token_exchange = v),
        );
        check(
            file.authorization_endpoint.at(),
            self.idp_url(
                &file.authorization_endpoint,
                &field("authorizationEndpoint"),
            )
            .map(|v| oauth.authorization_endpoint = v),
        );
        check(
            file.token_endpoint.at(),
            self.idp_url(&file.token_endpoint, &field("tokenEndpoint"))
                .map(|v| oauth.token_endpoint = v),
        );
        check(
            file.resource.at(),
            self.get(&file.resource, &field("resource")).and_then(|v| {
                oauth.resource = match v {
                    None => None,
                    Some((TextOrOff::Off, _)) => Some(crate::config::OAuthResource::Omitted),
                    Some((TextOrOff::Text(text), at)) => {
                        let text = self.expand_at(text, at, &field("resource"))?;
                        if text.is_empty() {
                            return Err(self.issue_at(
                                at,
                                "oauth.resource",
                                "must be a URL (or false to send none)",
                            ));
                        }
                        Some(crate::config::OAuthResource::Given(text))
                    }
                };
                Ok(())
            }),
        );
        check(
            file.client_metadata_url.at(),
            self.expanded(&file.client_metadata_url, &field("clientMetadataUrl"))
                .and_then(|v| {
                    if let Some(value) = &v
                        && !value.starts_with("https://")
                    {
                        let at = file.client_metadata_url.at().unwrap_or(self.at);
                        return Err(self.issue_at(
                            at,
                            "oauth.clientMetadataUrl",
                            "must be an https:// URL",
                        ));
                    }
                    oauth.client_metadata_url = v;
                    Ok(())
                }),
        );
        checked.sort_by_key(|(at, _)| *at);
        let first_error = checked
            .into_iter()
            .find_map(|(at, result)| result.err().map(|issue| (at, issue)));
        // Keys `oauth` does not take, up to the first problem.
        let unknown = self.unknown.iter().filter(|u| {
            u.parent() == "oauth" && first_error.as_ref().is_none_or(|(at, _)| u.offset < *at)
        });
        for u in unknown {
            warnings.push(
                ConfigIssue::warning("unknown field; ignored")
                    .in_file(&self.doc.path)
                    .at(u.position)
                    .server(self.server)
                    .field(format!("oauth.{}", u.key)),
            );
        }
        match first_error {
            Some((_, issue)) => Err(issue),
            None => Ok(oauth),
        }
    }

    /// An identity provider's URL (Cross-App Access): `https`, or `http` on loopback.
    fn idp_url(&self, value: &Keyed<Text>, field: &str) -> Result<Option<String>, ConfigIssue> {
        let Some(url) = self.expanded(value, field)? else {
            return Ok(None);
        };
        let ok = url::Url::parse(&url).is_ok_and(|u| {
            u.scheme() == "https"
                || u.scheme() == "http"
                    && matches!(u.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"))
        });
        if !ok {
            return Err(self.issue_at(
                value.at().unwrap_or(self.at),
                field,
                "must be an https:// URL (http:// only on localhost)",
            ));
        }
        Ok(Some(url))
    }

    fn flag(&self, value: &Keyed<Flag>, field: &str) -> Result<bool, ConfigIssue> {
        Ok(self.get(value, field)?.is_some_and(|(Flag(b), _)| *b))
    }

    fn expand_at(&self, text: &str, offset: usize, field: &str) -> Result<String, ConfigIssue> {
        expand_vars(text, self.env).map_err(|e| {
            let mut issue = self.issue_at(offset, field, e.to_string()).hint(format!(
                "set `{}` in the environment, or give a default: ${{{}:-value}}",
                e.var, e.var
            ));
            issue.missing_variable = Some(e.var);
            issue
        })
    }

    fn expanded(&self, value: &Keyed<Text>, field: &str) -> Result<Option<String>, ConfigIssue> {
        self.get(value, field)?
            .map(|(Text(text), at)| self.expand_at(text, at, field))
            .transpose()
    }

    fn string_list(
        &self,
        value: &Keyed<TextList>,
        field: &str,
        expand: bool,
    ) -> Result<Option<Vec<String>>, ConfigIssue> {
        let Some((TextList(items), _)) = self.get(value, field)? else {
            return Ok(None);
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                if expand {
                    self.expand_at(&item.value.0, item.offset, &format!("{field}[{i}]"))
                } else {
                    Ok(item.value.0.clone())
                }
            })
            .collect::<Result<_, _>>()
            .map(Some)
    }

    /// The map and where it starts.
    fn string_map(
        &self,
        value: &Keyed<TextMap>,
        field: &str,
        expand: bool,
    ) -> Result<Option<(Strings, usize)>, ConfigIssue> {
        let Some((TextMap(entries), at)) = self.get(value, field)? else {
            return Ok(None);
        };
        let mut map = BTreeMap::new();
        for (key, value) in entries {
            let text = if expand {
                self.expand_at(&value.value, value.offset, &format!("{field}.{key}"))?
            } else {
                value.value.clone()
            };
            map.insert(key.clone(), text);
        }
        Ok(Some((map, at)))
    }

    fn positive_int(&self, value: &Keyed<Count>, field: &str) -> Result<Option<u64>, ConfigIssue> {
        let Some((Count(text), at)) = self.get(value, field)? else {
            return Ok(None);
        };
        text.parse::<u64>()
            .ok()
            .filter(|v| *v > 0)
            .map(Some)
            .ok_or_else(|| {
                self.issue_at(
                    at,
                    field,
                    format!("expected a positive whole number, found {text}"),
                )
            })
    }

    fn millis(&self, value: &Keyed<Count>, field: &str) -> Result<Option<Duration>, ConfigIssue> {
        Ok(self.positive_int(value, field)?.map(Duration::from_millis))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name the deny list refused stays refused under the allow rule, in either case,
    /// and so do the loader's, git's config and bash's exported functions by their start.
    #[test]
    fn the_allow_rule_keeps_every_refusal_of_the_deny_list() {
        let denied = [
            "PATH",
            "NODE_OPTIONS",
            "NODE_PATH",
            "PYTHONSTARTUP",
            "PYTHONPATH",
            "PYTHONHOME",
            "PYTHONUSERBASE",
            "PYTHONEXECUTABLE",
            "PERL5OPT",
            "PERL5LIB",
            "PERLLIB",
            "PERL5DB",
            "RUBYOPT",
            "RUBYLIB",
            "JAVA_TOOL_OPTIONS",
            "_JAVA_OPTIONS",
            "JDK_JAVA_OPTIONS",
            "CLASSPATH",
            "GCONV_PATH",
            "LOCPATH",
            "NLSPATH",
            "HOSTALIASES",
            "BASH_ENV",
            "ENV",
            "PROMPT_COMMAND",
            "SHELLOPTS",
            "BASHOPTS",
            "PS4",
            "IFS",
            "GIT_SSH_COMMAND",
            "GIT_SSH",
            "GIT_EXEC_PATH",
            "GIT_ASKPASS",
            "SSH_ASKPASS",
            "GIT_CONFIG_PARAMETERS",
            "LD_PRELOAD",
            "DYLD_INSERT_LIBRARIES",
            "GIT_CONFIG_GLOBAL",
            "BASH_FUNC_ls%%",
        ];
        for name in denied {
            assert!(refused_env(name).is_some(), "{name}");
            assert!(refused_env(&name.to_ascii_lowercase()).is_some(), "{name}");
        }
        for name in [
            "API_KEY",
            "GITHUB_TOKEN",
            "LANG",
            "LC_ALL",
            "TZ",
            "NODE_ENV",
            "DEBUG",
        ] {
            assert_eq!(refused_env(name), None, "{name}");
        }
    }
}
