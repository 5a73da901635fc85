//! One `mcpServers` entry, checked field by field into a [`ServerConfig`].
//!
//! Every problem names the file, line, column, server and field. Keys Switchboard does not
//! know are kept (another host may have written them) and reported as warnings.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use jsonc_parser::ast;
use sha2::{Digest, Sha256};

use super::json::{Document, get, kind_name, prop_name, range_of, to_json};
use super::{
    ConfigHash, ConfigIssue, Environment, IdeTransport, OAuthConfig, Origin, ProtocolPin,
    ProxyTransport, RemoteTransport, RestartPolicy, Scope, ServerConfig, ServerName,
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

const COMMON_FIELDS: [&str; 13] = [
    "type",
    "disabled",
    "required",
    "alwaysLoad",
    "timeout",
    "toolTimeout",
    "protocol",
    "restart",
    "enabledTools",
    "disabledTools",
    "maxOutputTokens",
    "description",
    "logLevel",
];

/// Variables that let whoever controls them choose what the child process runs or loads. A
/// project's `.mcp.json` comes with a repository, so it may not set them (nor any `LD_*` or
/// `DYLD_*`, see [`is_hijacking_env`]). `PATH` is among them: with it, an approved `node` is
/// whatever `node` the repository puts first.
const HIJACKING_ENV: [&str; 35] = [
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
];

/// Whether a project's entry may not set `name`: [`HIJACKING_ENV`], the dynamic loader's
/// `LD_*` and `DYLD_*`, and git's `GIT_CONFIG_*` (which can set `core.sshCommand`).
fn is_hijacking_env(name: &str) -> bool {
    HIJACKING_ENV.contains(&name)
        || name.starts_with("LD_")
        || name.starts_with("DYLD_")
        || name.starts_with("GIT_CONFIG_")
        || name.starts_with("BASH_FUNC_")
}

/// Shells whose `-c` script could set a variable the `env` list refuses.
const SHELLS: [&str; 7] = ["sh", "bash", "dash", "zsh", "ksh", "ash", "fish"];

/// The file name of a command (`/usr/bin/env` → `env`).
fn command_base(command: &str) -> &str {
    command.rsplit('/').next().unwrap_or(command)
}

/// The names of refused variables a shell script or `env` argument assigns or exports.
fn assigned_hijacking_var(text: &str) -> Option<&str> {
    text.split(|c: char| c.is_whitespace() || c == ';' || c == '&' || c == '|')
        .filter_map(|word| word.split_once('=').map(|(name, _)| name))
        .find(|name| is_hijacking_env(name))
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

fn fields_of(kind: &str) -> &'static [&'static str] {
    match kind {
        "stdio" => &["command", "args", "env", "cwd"],
        "http" | "sse" => &["url", "headers", "oauth"],
        "ws" => &["url", "headers"],
        "sse-ide" | "ws-ide" => &["url", "ideName", "lockFile"],
        "proxy" => &["url", "headers", "tokenEnv", "tokenCommand"],
        _ => &[],
    }
}

fn all_fields() -> impl Iterator<Item = &'static str> {
    COMMON_FIELDS
        .into_iter()
        .chain(TRANSPORT_TYPES.into_iter().flat_map(fields_of).copied())
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
    ConfigHash(digest.iter().map(|b| format!("{b:02x}")).collect())
}

/// An entry's hash bound to the program it runs (an approval of a resolved command).
pub(crate) fn bound_hash(hash: &ConfigHash, command: &str) -> ConfigHash {
    let digest = Sha256::digest(format!("{}\0{command}", hash.0).as_bytes());
    ConfigHash(digest.iter().map(|b| format!("{b:02x}")).collect())
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
    let parsed = parse_entry(&doc, name, (1, 1), &value, origin, env);
    parsed.config.map(|config| (config, parsed.warnings))
}

pub(crate) fn parse_entry(
    doc: &Document,
    name: &str,
    name_position: (usize, usize),
    value: &ast::Value<'_>,
    origin: Origin,
    env: &Environment,
) -> ParsedEntry {
    let raw = to_json(value);
    let hash = entry_hash(&raw);
    let walker = Walker {
        doc,
        server: name,
        env,
        warnings: Default::default(),
    };
    let config = walker.entry(name, name_position, value, origin, hash.clone());
    ParsedEntry {
        config,
        warnings: walker.warnings.into_inner(),
        raw,
        hash,
    }
}

struct Walker<'a> {
    doc: &'a Document,
    server: &'a str,
    env: &'a Environment,
    warnings: std::cell::RefCell<Vec<ConfigIssue>>,
}

type Prop<'p, 'a> = &'p ast::ObjectProp<'a>;

impl<'a> Walker<'a> {
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

    fn wrong_type(&self, value: &ast::Value<'_>, field: &str, expected: &str) -> ConfigIssue {
        self.issue_at(
            range_of(value).start,
            field,
            format!("expected {expected}, found {}", kind_name(value)),
        )
    }

    fn entry(
        &self,
        name: &str,
        name_position: (usize, usize),
        value: &ast::Value<'_>,
        origin: Origin,
        hash: ConfigHash,
    ) -> Result<ServerConfig, ConfigIssue> {
        let server_name = ServerName::new(name).map_err(|e| {
            let issue = ConfigIssue::error(e.to_string())
                .in_file(&self.doc.path)
                .at(name_position)
                .server(name);
            match e.suggestion {
                Some(s) => issue.hint(format!("rename it, for example to `{s}`")),
                None => issue,
            }
        })?;
        let ast::Value::Object(obj) = value else {
            return Err(self.wrong_type(value, "", "an object describing the server"));
        };
        let kind = self.kind(obj)?;
        let mut extra = BTreeMap::new();
        for prop in &obj.properties {
            let key = prop_name(prop);
            if COMMON_FIELDS.contains(&key) || fields_of(kind).contains(&key) {
                continue;
            }
            let message = if all_fields().any(|f| f == key) {
                format!("does not apply to type `{kind}`; ignored")
            } else {
                "unknown field; kept as written and ignored".to_owned()
            };
            let warning = ConfigIssue::warning(message)
                .in_file(&self.doc.path)
                .at(self.doc.position(prop.range.start))
                .server(self.server)
                .field(key);
            self.warnings.borrow_mut().push(warning);
            extra.insert(key.to_owned(), to_json(&prop.value));
        }

        let transport = match kind {
            "stdio" => Transport::Stdio(self.stdio(obj, &origin)?),
            "http" => Transport::Http(self.remote(obj, kind)?),
            "sse" => Transport::Sse(self.remote(obj, kind)?),
            "ws" => Transport::WebSocket(self.remote(obj, kind)?),
            "sse-ide" => Transport::SseIde(self.ide(obj, kind)?),
            "ws-ide" => Transport::WsIde(self.ide(obj, kind)?),
            "proxy" => Transport::Proxy(self.proxy(obj)?),
            _ => Transport::Sdk,
        };

        let protocol = match get(obj, "protocol") {
            None => ProtocolPin::Auto,
            Some(p) => match self.string(p, "protocol")?.as_str() {
                "auto" => ProtocolPin::Auto,
                v if PROTOCOL_VERSIONS.contains(&v) => ProtocolPin::Version(v.to_owned()),
                v => {
                    return Err(self.issue_at(
                        range_of(&p.value).start,
                        "protocol",
                        format!(
                            "unknown protocol `{v}`; use `auto` or one of {}",
                            PROTOCOL_VERSIONS.join(", ")
                        ),
                    ));
                }
            },
        };
        let restart = match get(obj, "restart") {
            None => RestartPolicy::Never,
            Some(p) => match self.string(p, "restart")?.as_str() {
                "never" => RestartPolicy::Never,
                "on-failure" => RestartPolicy::OnFailure,
                v => {
                    return Err(self.issue_at(
                        range_of(&p.value).start,
                        "restart",
                        format!("unknown restart policy `{v}`; use `never` or `on-failure`"),
                    ));
                }
            },
        };

        let log_level = match get(obj, "logLevel") {
            None => None,
            Some(p) => {
                let level = self.string(p, "logLevel")?;
                if !LOG_LEVELS.contains(&level.as_str()) {
                    return Err(self.issue_at(
                        range_of(&p.value).start,
                        "logLevel",
                        format!(
                            "unknown log level `{level}`; use one of {}",
                            LOG_LEVELS.join(", ")
                        ),
                    ));
                }
                Some(level)
            }
        };

        Ok(ServerConfig {
            name: server_name,
            origin,
            hash,
            transport,
            disabled: self.opt_bool(obj, "disabled")?.unwrap_or(false),
            required: self.opt_bool(obj, "required")?.unwrap_or(false),
            always_load: self.opt_bool(obj, "alwaysLoad")?.unwrap_or(false),
            connect_timeout: self.opt_millis(obj, "timeout")?,
            tool_timeout: self.opt_millis(obj, "toolTimeout")?,
            protocol,
            restart,
            enabled_tools: get(obj, "enabledTools")
                .map(|p| self.string_list(p, "enabledTools", false))
                .transpose()?,
            disabled_tools: get(obj, "disabledTools")
                .map(|p| self.string_list(p, "disabledTools", false))
                .transpose()?
                .unwrap_or_default(),
            max_output_tokens: get(obj, "maxOutputTokens")
                .map(|p| self.positive_int(p, "maxOutputTokens"))
                .transpose()?,
            log_level,
            extra,
        })
    }

    fn kind(&self, obj: &ast::Object<'_>) -> Result<&'static str, ConfigIssue> {
        if let Some(p) = get(obj, "type") {
            let written = self.string(p, "type")?;
            let normalized = match written.as_str() {
                "streamable-http" | "streamableHttp" | "streamable_http" => "http",
                "websocket" => "ws",
                other => other,
            };
            return TRANSPORT_TYPES
                .into_iter()
                .find(|t| *t == normalized)
                .ok_or_else(|| {
                    self.issue_at(
                        range_of(&p.value).start,
                        "type",
                        format!(
                            "unknown type `{written}`; valid types: {}",
                            TRANSPORT_TYPES.join(", ")
                        ),
                    )
                });
        }
        match (get(obj, "command"), get(obj, "url")) {
            (Some(_), Some(_)) => Err(self.issue_at(
                obj.range.start,
                "",
                "has both `command` and `url`; set `type` to say which transport to use",
            )),
            (Some(_), None) => Ok("stdio"),
            (None, Some(url)) => {
                let text = self.string(url, "url")?;
                Ok(if text.starts_with("ws://") || text.starts_with("wss://") { "ws" } else { "http" })
            }
            (None, None) => Err(self
                .issue_at(obj.range.start, "", "needs `command` (a local server) or `url` (a remote one)")
                .hint("for example {\"command\": \"npx\", \"args\": [\"-y\", \"@scope/server\"]} or {\"type\": \"http\", \"url\": \"https://host/mcp\"}")),
        }
    }

    fn stdio(&self, obj: &ast::Object<'_>, origin: &Origin) -> Result<StdioTransport, ConfigIssue> {
        let command = match get(obj, "command") {
            Some(p) => self.expanded(p, "command")?,
            None => {
                return Err(self.issue_at(
                    obj.range.start,
                    "command",
                    "type `stdio` needs `command`",
                ));
            }
        };
        if command.trim().is_empty() {
            let p = get(obj, "command").map_or(obj.range.start, |p| range_of(&p.value).start);
            return Err(self.issue_at(p, "command", "is empty"));
        }
        let env = get(obj, "env")
            .map(|p| self.string_map(p, "env", true))
            .transpose()?
            .unwrap_or_default();
        let args = get(obj, "args")
            .map(|p| self.string_list(p, "args", true))
            .transpose()?
            .unwrap_or_default();
        let mut command = command;
        if origin.scope == Scope::Project {
            self.project_stdio_checks(obj, &command, &args, &env)?;
            // What runs is bound now, against the user's own PATH: the approval shows it.
            if let Some(resolved) = resolve_on_path(&command, self.env) {
                command = resolved;
            }
        }
        Ok(StdioTransport {
            command,
            args,
            env,
            cwd: get(obj, "cwd")
                .map(|p| self.expanded(p, "cwd").map(PathBuf::from))
                .transpose()?,
        })
    }

    /// What a repository may not choose for a server it defines: variables that decide what
    /// runs or loads, and the ways around that list (`env VAR=… cmd`, `sh -c "VAR=… cmd"`).
    fn project_stdio_checks(
        &self,
        obj: &ast::Object<'_>,
        command: &str,
        args: &[String],
        env: &BTreeMap<String, String>,
    ) -> Result<(), ConfigIssue> {
        let hint = "define this server in your user or local scope instead";
        if let Some(key) = env.keys().find(|k| is_hijacking_env(k)) {
            let p = get(obj, "env")
                .and_then(|p| match &p.value {
                    ast::Value::Object(o) => get(o, key).map(|p| p.range.start),
                    _ => None,
                })
                .unwrap_or(obj.range.start);
            let message = format!(
                "`{key}` may not be set from a project's .mcp.json: \
                 it would let the repository choose what the process runs"
            );
            return Err(self.issue_at(p, &format!("env.{key}"), message).hint(hint));
        }
        let at_command = get(obj, "command").map_or(obj.range.start, |p| range_of(&p.value).start);
        let base = command_base(command.trim());
        if base == "env" {
            return Err(self
                .issue_at(
                    at_command,
                    "command",
                    "`env` may not be the command of a project's server: it could set \
                     variables a project may not set; name the program itself",
                )
                .hint(hint));
        }
        if SHELLS.contains(&base) {
            let at_args = get(obj, "args").map_or(obj.range.start, |p| range_of(&p.value).start);
            for (i, arg) in args.iter().enumerate() {
                if let Some(var) = assigned_hijacking_var(arg) {
                    return Err(self
                        .issue_at(
                            at_args,
                            &format!("args[{i}]"),
                            format!(
                                "the shell script sets `{var}`, which a project's .mcp.json \
                                 may not set: it would let the repository choose what runs"
                            ),
                        )
                        .hint(hint));
                }
            }
        }
        Ok(())
    }

    fn remote(&self, obj: &ast::Object<'_>, kind: &str) -> Result<RemoteTransport, ConfigIssue> {
        Ok(RemoteTransport {
            url: self.url(obj, kind)?,
            headers: self.headers(obj)?,
            oauth: get(obj, "oauth").map(|p| self.oauth(p)).transpose()?,
        })
    }

    fn ide(&self, obj: &ast::Object<'_>, kind: &str) -> Result<IdeTransport, ConfigIssue> {
        Ok(IdeTransport {
            url: self.url(obj, kind)?,
            ide_name: get(obj, "ideName")
                .map(|p| self.string(p, "ideName"))
                .transpose()?,
            lock_file: get(obj, "lockFile")
                .map(|p| self.expanded(p, "lockFile").map(PathBuf::from))
                .transpose()?,
        })
    }

    fn proxy(&self, obj: &ast::Object<'_>) -> Result<ProxyTransport, ConfigIssue> {
        let token = match (get(obj, "tokenEnv"), get(obj, "tokenCommand")) {
            (Some(p), None) => TokenSource::Env(self.string(p, "tokenEnv")?),
            (None, Some(p)) => {
                let argv = self.string_list(p, "tokenCommand", true)?;
                if argv.is_empty() {
                    return Err(self.issue_at(
                        range_of(&p.value).start,
                        "tokenCommand",
                        "is empty",
                    ));
                }
                TokenSource::Command(argv)
            }
            (None, None) => TokenSource::Provider,
            (Some(_), Some(p)) => {
                return Err(self.issue_at(
                    p.range.start,
                    "tokenCommand",
                    "set either `tokenEnv` or `tokenCommand`, not both",
                ));
            }
        };
        Ok(ProxyTransport {
            url: self.url(obj, "proxy")?,
            headers: self.headers(obj)?,
            token,
        })
    }

    fn url(&self, obj: &ast::Object<'_>, kind: &str) -> Result<url::Url, ConfigIssue> {
        let Some(p) = get(obj, "url") else {
            return Err(self.issue_at(
                obj.range.start,
                "url",
                format!("type `{kind}` needs `url`"),
            ));
        };
        let text = self.expanded(p, "url")?;
        let at = range_of(&p.value).start;
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

    fn headers(&self, obj: &ast::Object<'_>) -> Result<BTreeMap<String, String>, ConfigIssue> {
        let Some(p) = get(obj, "headers") else {
            return Ok(BTreeMap::new());
        };
        let headers = self.string_map(p, "headers", true)?;
        for (name, value) in &headers {
            let valid_name = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            if !valid_name {
                return Err(self.issue_at(
                    range_of(&p.value).start,
                    &format!("headers.{name}"),
                    "is not a valid HTTP header name",
                ));
            }
            if value.contains(['\r', '\n']) {
                return Err(self.issue_at(
                    range_of(&p.value).start,
                    &format!("headers.{name}"),
                    "a header value may not contain a line break",
                ));
            }
        }
        Ok(headers)
    }

    fn oauth(&self, prop: Prop<'_, '_>) -> Result<OAuthConfig, ConfigIssue> {
        let ast::Value::Object(obj) = &prop.value else {
            return Err(self.wrong_type(&prop.value, "oauth", "an object"));
        };
        let mut oauth = OAuthConfig::default();
        for p in &obj.properties {
            match prop_name(p) {
                "clientId" => oauth.client_id = Some(self.expanded(p, "oauth.clientId")?),
                "clientSecretEnv" => {
                    oauth.client_secret_env = Some(self.string(p, "oauth.clientSecretEnv")?)
                }
                "clientSecretKeychain" => {
                    oauth.client_secret_keychain =
                        Some(self.string(p, "oauth.clientSecretKeychain")?)
                }
                "callbackPort" => {
                    let port = self.positive_int(p, "oauth.callbackPort")?;
                    oauth.callback_port = Some(u16::try_from(port).map_err(|_| {
                        self.issue_at(
                            range_of(&p.value).start,
                            "oauth.callbackPort",
                            "must be a port number (1-65535)",
                        )
                    })?);
                }
                "scopes" => oauth.scopes = self.string_list(p, "oauth.scopes", false)?,
                "grantType" => match self.string(p, "oauth.grantType")?.as_str() {
                    "client_credentials" => oauth.client_credentials = true,
                    "authorization_code" => oauth.client_credentials = false,
                    _ => {
                        return Err(self.issue_at(
                            range_of(&p.value).start,
                            "oauth.grantType",
                            "must be \"authorization_code\" or \"client_credentials\"",
                        ));
                    }
                },
                "privateKeyEnv" => {
                    oauth.private_key_env = Some(self.string(p, "oauth.privateKeyEnv")?)
                }
                "clientMetadataUrl" => {
                    let value = self.expanded(p, "oauth.clientMetadataUrl")?;
                    if !value.starts_with("https://") {
                        return Err(self.issue_at(
                            range_of(&p.value).start,
                            "oauth.clientMetadataUrl",
                            "must be an https:// URL",
                        ));
                    }
                    oauth.client_metadata_url = Some(value);
                }
                other => self.warnings.borrow_mut().push(
                    ConfigIssue::warning("unknown field; ignored")
                        .in_file(&self.doc.path)
                        .at(self.doc.position(p.range.start))
                        .server(self.server)
                        .field(format!("oauth.{other}")),
                ),
            }
        }
        Ok(oauth)
    }

    fn string(&self, prop: Prop<'_, '_>, field: &str) -> Result<String, ConfigIssue> {
        match &prop.value {
            ast::Value::StringLit(s) => Ok(s.value.to_string()),
            other => Err(self.wrong_type(other, field, "a string")),
        }
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

    fn expanded(&self, prop: Prop<'_, '_>, field: &str) -> Result<String, ConfigIssue> {
        let text = self.string(prop, field)?;
        self.expand_at(&text, range_of(&prop.value).start, field)
    }

    fn string_list(
        &self,
        prop: Prop<'_, '_>,
        field: &str,
        expand: bool,
    ) -> Result<Vec<String>, ConfigIssue> {
        let ast::Value::Array(items) = &prop.value else {
            return Err(self.wrong_type(&prop.value, field, "an array of strings"));
        };
        items
            .elements
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let field = format!("{field}[{i}]");
                match item {
                    ast::Value::StringLit(s) if expand => {
                        self.expand_at(&s.value, s.range.start, &field)
                    }
                    ast::Value::StringLit(s) => Ok(s.value.to_string()),
                    other => Err(self.wrong_type(other, &field, "a string")),
                }
            })
            .collect()
    }

    fn string_map(
        &self,
        prop: Prop<'_, '_>,
        field: &str,
        expand: bool,
    ) -> Result<BTreeMap<String, String>, ConfigIssue> {
        let ast::Value::Object(obj) = &prop.value else {
            return Err(self.wrong_type(&prop.value, field, "an object of strings"));
        };
        obj.properties
            .iter()
            .map(|p| {
                let key = prop_name(p);
                let field = format!("{field}.{key}");
                let value = match &p.value {
                    ast::Value::StringLit(s) if expand => {
                        self.expand_at(&s.value, s.range.start, &field)?
                    }
                    ast::Value::StringLit(s) => s.value.to_string(),
                    // Numbers and booleans are common in hand-written env maps; take their text.
                    ast::Value::NumberLit(n) => n.value.to_owned(),
                    ast::Value::BooleanLit(b) => b.value.to_string(),
                    other => return Err(self.wrong_type(other, &field, "a string")),
                };
                Ok((key.to_owned(), value))
            })
            .collect()
    }

    fn opt_bool(&self, obj: &ast::Object<'_>, field: &str) -> Result<Option<bool>, ConfigIssue> {
        get(obj, field)
            .map(|p| match &p.value {
                ast::Value::BooleanLit(b) => Ok(b.value),
                other => Err(self.wrong_type(other, field, "true or false")),
            })
            .transpose()
    }

    fn positive_int(&self, prop: Prop<'_, '_>, field: &str) -> Result<u64, ConfigIssue> {
        match &prop.value {
            ast::Value::NumberLit(n) => {
                n.value
                    .parse::<u64>()
                    .ok()
                    .filter(|v| *v > 0)
                    .ok_or_else(|| {
                        self.issue_at(
                            n.range.start,
                            field,
                            format!("expected a positive whole number, found {}", n.value),
                        )
                    })
            }
            other => Err(self.wrong_type(other, field, "a positive whole number")),
        }
    }

    fn opt_millis(
        &self,
        obj: &ast::Object<'_>,
        field: &str,
    ) -> Result<Option<Duration>, ConfigIssue> {
        get(obj, field)
            .map(|p| self.positive_int(p, field).map(Duration::from_millis))
            .transpose()
    }
}
