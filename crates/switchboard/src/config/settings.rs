//! The settings files of every scope as serde structs, read through [`super::de`] so problems
//! keep their file, line, column and field path. A new setting is one field here.
//!
//! Each file's top-level keys are its struct's fields: a key no field declares is warned about
//! (and kept as written). Each scope's file is read once, by [`super::ConfigSet::load`]; what
//! it holds besides servers is kept as a [`ScopeSettings`], from which the permissions and the
//! interaction settings are built. `mcpServers` and the local file's `projects` are declared as
//! [`Skipped`] here: `load.rs` goes through them by name (each entry read as a [`ServerFile`],
//! each project's settings as a [`LocalProject`]), keeping every name's position.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use serde::de::DeserializeOwned;

pub(crate) use super::de::{Checked, Located, Pos};

/// How the settings of two scopes become one: `self` takes precedence over `lower` (where
/// every scope's part applies, as rules and hooks do, `self`'s come first). Scopes are combined
/// from the highest precedence down; a new kind of setting says here how its scopes merge.
pub(crate) trait Combine {
    fn combine(&mut self, lower: Self);
}
use super::de::{self, NumberText, Skipped};
pub(crate) use super::de::{Keyed, Spanned};
use super::policy::PolicyFile;
use super::{ConfigIssue, Scope};

/// What one scope's file holds besides its servers, read once: permissions, hooks, and (the
/// user's file only) sampling and roots, with every problem already located.
#[derive(Debug, Clone)]
pub struct ScopeSettings {
    pub(crate) scope: Scope,
    pub(crate) file: PathBuf,
    /// Why the file (or its `projects.<root>` in the local file) could not be read; every
    /// reader of its settings reports it.
    pub(crate) broken: Option<ConfigIssue>,
    /// The field path the sections sit under: `projects.<root>.` in the local file.
    pub(crate) prefix: String,
    pub(crate) sections: Sections,
    /// The problems of the sections' broken parts, located.
    pub(crate) errors: Vec<de::Error>,
    /// Keys no struct declares, located (top-level keys included).
    pub(crate) unknown: Vec<de::Unknown>,
}

impl ScopeSettings {
    pub(crate) fn new(scope: Scope, file: PathBuf) -> ScopeSettings {
        ScopeSettings {
            scope,
            file,
            broken: None,
            prefix: String::new(),
            sections: Sections::default(),
            errors: Vec::new(),
            unknown: Vec::new(),
        }
    }

    /// The problem of the broken part at `field` (below the prefix).
    pub(crate) fn error_at(&self, field: &str) -> Option<&de::Error> {
        self.errors
            .iter()
            .find(|e| e.field().strip_prefix(self.prefix.as_str()) == Some(field))
    }

    /// Keys no struct declares in the object at `parent` (below the prefix).
    pub(crate) fn unknown_in(&self, parent: &str) -> impl Iterator<Item = &de::Unknown> {
        let full = if parent.is_empty() {
            self.prefix.trim_end_matches('.').to_owned()
        } else {
            format!("{}{parent}", self.prefix)
        };
        self.unknown.iter().filter(move |u| u.parent() == full)
    }
}

/// The sections a scope's file may hold besides servers (what a file does not allow stays
/// absent).
#[derive(Debug, Clone, Default)]
pub(crate) struct Sections {
    pub(crate) permissions: Checked<Object<PermissionsFile>>,
    pub(crate) hooks: Field<Object<HooksFile>>,
    pub(crate) sampling: Checked<SamplingFile>,
    pub(crate) roots: Checked<RootsFile>,
    /// The user's default `startup` for entries that do not say.
    pub(crate) startup: Checked<StartupValue>,
    /// The user's default `idleTimeout` (seconds) for entries that do not say.
    pub(crate) idle_timeout: Checked<Seconds>,
    /// The MCP Registry `mcp search` and `mcp add --from-registry` use (the user's file only).
    pub(crate) registry_url: Checked<String>,
    /// `switchboard serve`'s tool rules (the user's file only; see `gateway.rs`).
    pub(crate) gateway: Checked<Object<GatewayFile>>,
    /// `pinning`: the user's default for entries that do not say (user file); forced on for
    /// every server (managed file, `true`). See `crate::pins`.
    pub(crate) pinning: Checked<bool>,
    /// `scanOnPin`: the user's default for entries that do not say (user file). See
    /// `crate::pins`.
    pub(crate) scan_on_pin: Checked<bool>,
    /// Named profiles (user and managed files; see `profiles.rs`).
    pub(crate) profiles: Checked<Object<ProfilesFile>>,
}

/// A scope's file struct: what it holds besides servers.
pub(crate) trait ScopeFile: DeserializeOwned {
    fn sections(self) -> Sections;
}

impl ScopeFile for UserFile {
    fn sections(self) -> Sections {
        Sections {
            permissions: self.permissions,
            hooks: self.hooks,
            sampling: self.sampling,
            roots: self.roots,
            startup: self.startup,
            idle_timeout: self.idle_timeout,
            registry_url: self.registry_url,
            gateway: self.gateway,
            pinning: self.pinning,
            scan_on_pin: self.scan_on_pin,
            profiles: self.profiles,
        }
    }
}

impl ScopeFile for ProjectFile {
    fn sections(self) -> Sections {
        Sections::default()
    }
}

impl ScopeFile for LocalFile {
    fn sections(self) -> Sections {
        Sections::default()
    }
}

impl ScopeFile for LocalProject {
    fn sections(self) -> Sections {
        Sections {
            permissions: self.permissions,
            hooks: self.hooks,
            ..Sections::default()
        }
    }
}

impl ScopeFile for ManagedFile {
    fn sections(self) -> Sections {
        Sections {
            permissions: self.permissions,
            hooks: self.hooks,
            pinning: self.pinning,
            profiles: self.profiles,
            ..Sections::default()
        }
    }
}

impl ScopeFile for ProjectSettingsFile {
    fn sections(self) -> Sections {
        Sections {
            permissions: self.permissions,
            hooks: self.hooks,
            ..Sections::default()
        }
    }
}

/// "`a`, `b` or `c`": the keys a struct takes, for messages.
pub(crate) fn one_of(keys: &[&str]) -> String {
    let quoted: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.concat(),
    }
}

/// A key's value: absent, or where it was written and what it holds (or that it is broken).
pub(crate) type Field<T> = Checked<Located<Checked<T>>>;

// Keys named `_x` below are known to the file but read elsewhere; being fields, they are not
// reported as unknown.

/// `$XDG_CONFIG_HOME/switchboard/mcp.json`: the user's servers and settings.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UserFile {
    #[serde(rename = "mcpServers", default)]
    _mcp_servers: Skipped,
    /// Known plugin marketplaces, read by `plugin.rs`.
    #[serde(rename = "marketplaces", default)]
    _marketplaces: Skipped,
    /// Installed plugins, read by `plugin.rs`.
    #[serde(rename = "plugins", default)]
    _plugins: Skipped,
    #[serde(default)]
    pub(crate) permissions: Checked<Object<PermissionsFile>>,
    #[serde(default)]
    pub(crate) hooks: Field<Object<HooksFile>>,
    /// Only the user's own file may name a sampling command.
    #[serde(default)]
    pub(crate) sampling: Checked<SamplingFile>,
    #[serde(default)]
    pub(crate) roots: Checked<RootsFile>,
    /// Every entry's `startup` unless it says otherwise.
    #[serde(default)]
    pub(crate) startup: Checked<StartupValue>,
    /// Every entry's `idleTimeout` unless it says otherwise.
    #[serde(default)]
    pub(crate) idle_timeout: Checked<Seconds>,
    /// The MCP Registry's base URL (read by `registry.rs`).
    #[serde(default)]
    pub(crate) registry_url: Checked<String>,
    /// `switchboard serve`'s settings (read by `gateway.rs`).
    #[serde(default)]
    pub(crate) gateway: Checked<Object<GatewayFile>>,
    /// `false`: no server's tools are pinned unless its entry says `"pinning": true`.
    #[serde(default)]
    pub(crate) pinning: Checked<bool>,
    /// `true`: every server's tools are scanned when first pinned, unless its entry says
    /// `"scanOnPin": false`.
    #[serde(default)]
    pub(crate) scan_on_pin: Checked<bool>,
    /// Named profiles: the servers and tools each offers.
    #[serde(default)]
    pub(crate) profiles: Checked<Object<ProfilesFile>>,
    #[serde(rename = "$schema", default)]
    _schema: Skipped,
}

/// `startup`: `eager` or `lazy`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct StartupValue(pub(crate) super::Startup);

impl<'de> Deserialize<'de> for StartupValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match String::deserialize(d).as_deref() {
            Ok("eager") => Ok(StartupValue(super::Startup::Eager)),
            Ok("lazy") => Ok(StartupValue(super::Startup::Lazy)),
            _ => Err(serde::de::Error::custom("must be `eager` or `lazy`")),
        }
    }
}

/// A positive whole number of seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Seconds(pub(crate) u64);

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match u64::deserialize(d) {
            Ok(n) if n > 0 => Ok(Seconds(n)),
            _ => Err(serde::de::Error::custom(
                "must be a positive whole number of seconds",
            )),
        }
    }
}

/// A project's `.mcp.json`, and each `--mcp-config`: servers only.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ProjectFile {
    #[serde(rename = "mcpServers", default)]
    _mcp_servers: Skipped,
    /// Installed plugins, read by `plugin.rs`.
    #[serde(rename = "plugins", default)]
    _plugins: Skipped,
    #[serde(rename = "$schema", default)]
    _schema: Skipped,
}

/// The local file: each project's private servers and settings under `projects.<root>`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct LocalFile {
    #[serde(rename = "projects", default)]
    _projects: Skipped,
    #[serde(rename = "$schema", default)]
    _schema: Skipped,
}

/// One project's entry of the local file (other keys there are not ours to judge).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct LocalProject {
    #[serde(rename = "mcpServers", default)]
    _mcp_servers: Skipped,
    /// Installed plugins, read by `plugin.rs`.
    #[serde(rename = "plugins", default)]
    _plugins: Skipped,
    #[serde(default)]
    pub(crate) permissions: Checked<Object<PermissionsFile>>,
    #[serde(default)]
    pub(crate) hooks: Field<Object<HooksFile>>,
}

/// The administrator's managed file.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ManagedFile {
    #[serde(rename = "mcpServers", default)]
    _mcp_servers: Skipped,
    #[serde(default)]
    pub(crate) policy: Checked<Object<PolicyFile>>,
    #[serde(default)]
    pub(crate) permissions: Checked<Object<PermissionsFile>>,
    #[serde(default)]
    pub(crate) hooks: Field<Object<HooksFile>>,
    /// `true`: every server's tools are pinned, whatever the entries and the user say.
    #[serde(default)]
    pub(crate) pinning: Checked<bool>,
    /// Named profiles; one named as a user's is the managed file's.
    #[serde(default)]
    pub(crate) profiles: Checked<Object<ProfilesFile>>,
    #[serde(rename = "$schema", default)]
    _schema: Skipped,
}

/// A project's `.switchboard/settings.json`: its permissions and hooks, nothing else.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ProjectSettingsFile {
    #[serde(default)]
    pub(crate) permissions: Checked<Object<PermissionsFile>>,
    #[serde(default)]
    pub(crate) hooks: Field<Object<HooksFile>>,
    #[serde(rename = "$schema", default)]
    _schema: Skipped,
}

/// A value that must be an object (`expected an object, found …` otherwise).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Object<T>(pub(crate) T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de::expect(d, &["an object"], "an object").map(Object)
    }
}

/// `permissions` as written: lists of tool patterns.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct PermissionsFile {
    #[serde(default)]
    pub(crate) allow: Checked<Located<PatternList>>,
    #[serde(default)]
    pub(crate) ask: Checked<Located<PatternList>>,
    #[serde(default)]
    pub(crate) deny: Checked<Located<PatternList>>,
}

/// `gateway` as written: the gateway's tool rules, each a string as `--allow-tool` /
/// `--deny-tool` take it, and its rate limits, each as `--rate-limit` takes it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GatewayFile {
    #[serde(default)]
    pub(crate) allow_tools: Checked<Located<PatternList>>,
    #[serde(default)]
    pub(crate) deny_tools: Checked<Located<PatternList>>,
    #[serde(default)]
    pub(crate) rate_limits: Checked<Located<PatternList>>,
}

/// `profiles` as written: each profile by its name.
pub(crate) type ProfilesFile = std::collections::BTreeMap<String, Checked<Object<ProfileFile>>>;

/// One profile as written: the servers it starts, the tools it offers (tool patterns), and
/// the gateway's search mode on its path.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ProfileFile {
    #[serde(default)]
    pub(crate) servers: Checked<Located<PatternList>>,
    #[serde(default)]
    pub(crate) tools: Checked<Located<PatternList>>,
    #[serde(default)]
    pub(crate) tool_search: Checked<Located<PatternText>>,
}

/// A list of tool patterns; each broken element is a problem of its own.
#[derive(Debug, Clone, Default)]
pub(crate) struct PatternList(pub(crate) Vec<Checked<Located<PatternText>>>);

impl<'de> Deserialize<'de> for PatternList {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de::expect(d, &["an array"], "a list of tool patterns").map(PatternList)
    }
}

/// A tool pattern as written (checked when the rules are built).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PatternText(pub(crate) String);

impl<'de> Deserialize<'de> for PatternText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de::expect(d, &["a string"], "a tool pattern").map(PatternText)
    }
}

/// `hooks` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HooksFile {
    #[serde(default)]
    pub(crate) pre_call: Field<HookList>,
    #[serde(default)]
    pub(crate) post_call: Field<HookList>,
    /// Hooks that may answer a server's elicitation before anyone is asked (`Elicitation`,
    /// the seeds' host's event name, is read too).
    #[serde(default, alias = "Elicitation")]
    pub(crate) elicitation: Field<HookList>,
}

/// A list of hooks; each is read on its own.
#[derive(Debug, Clone, Default)]
pub(crate) struct HookList(pub(crate) Vec<Located<Checked<HookEntry>>>);

impl<'de> Deserialize<'de> for HookList {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de::expect(d, &["an array"], "a list of hooks").map(HookList)
    }
}

/// One hook as written; every field's problem is its own.
#[derive(Debug, Clone, Default)]
pub(crate) struct HookEntry(pub(crate) HookFields);

impl<'de> Deserialize<'de> for HookEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de::expect(d, &["an object"], "a hook object with `command`").map(HookEntry)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HookFields {
    #[serde(rename = "match", default)]
    pub(crate) pattern: Checked<Located<PatternText>>,
    #[serde(default)]
    pub(crate) command: Checked<Located<HookCommand>>,
    #[serde(default)]
    pub(crate) timeout_ms: Checked<Located<HookMillis>>,
}

/// A hook's `command`: a list of strings (a string alone is read, to say how to write it).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum HookCommand {
    Text,
    List(Vec<Located<String>>),
}

impl<'de> Deserialize<'de> for HookCommand {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de::expect::<_, CommandValue>(d, &["a string", "an array"], "a list of strings")
            .map(|c| c.0)
    }
}

struct CommandValue(HookCommand);

impl<'de> Deserialize<'de> for CommandValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = CommandValue;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of strings")
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<CommandValue, E> {
                Ok(CommandValue(HookCommand::Text))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<CommandValue, A::Error> {
                let mut list = Vec::new();
                while let Some(arg) = seq.next_element::<Located<ArgText>>()? {
                    list.push(Located {
                        key: arg.key,
                        at: arg.at,
                        empty: arg.empty,
                        value: arg.value.0,
                    });
                }
                Ok(CommandValue(HookCommand::List(list)))
            }
        }
        d.deserialize_any(V)
    }
}

struct ArgText(String);

impl<'de> Deserialize<'de> for ArgText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de::expect(d, &["a string"], "a string").map(ArgText)
    }
}

/// A hook's `timeoutMs` as written (checked when the hook is built).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HookMillis(pub(crate) String);

impl<'de> Deserialize<'de> for HookMillis {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de::expect::<_, NumberText>(d, &["a number"], "milliseconds").map(|n| HookMillis(n.0))
    }
}

/// `sampling` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct SamplingFile {
    pub(crate) command: Located<String>,
    #[serde(default)]
    pub(crate) args: Vec<String>,
    pub(crate) timeout_ms: Option<u64>,
    #[serde(default)]
    pub(crate) servers: BTreeMap<String, SamplingServerFile>,
}

/// One server's entry of `sampling.servers`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct SamplingServerFile {
    pub(crate) max_tokens: Option<u32>,
}

/// `roots`: folder paths as written (`~/` not yet expanded).
#[derive(Debug, Clone)]
pub(crate) struct RootsFile(pub(crate) Vec<String>);

impl<'de> Deserialize<'de> for RootsFile {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<String>::deserialize(d)
            .map(RootsFile)
            .map_err(|_| serde::de::Error::custom("must be a list of folder paths"))
    }
}

/// One `mcpServers` entry as written. Every field's problem is its own (collected, not fatal),
/// so `parse.rs` finds an entry's first problem in the order it checks the fields. A new
/// setting is one field here (and, when it belongs to one transport, one name in
/// `parse::fields_of`).
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct ServerFile {
    #[serde(rename = "type")]
    pub(crate) kind: Keyed<Text>,
    pub(crate) disabled: Keyed<Flag>,
    pub(crate) required: Keyed<Flag>,
    /// Listed even in the gateway's search mode.
    pub(crate) always_load: Keyed<Flag>,
    pub(crate) timeout: Keyed<Count>,
    pub(crate) tool_timeout: Keyed<Count>,
    pub(crate) protocol: Keyed<Text>,
    pub(crate) restart: Keyed<Text>,
    /// `eager` (the default) or `lazy`: started when something first needs it.
    pub(crate) startup: Keyed<Text>,
    /// Seconds without a request after which the server is stopped (back to lazy).
    pub(crate) idle_timeout: Keyed<Count>,
    pub(crate) enabled_tools: Keyed<TextList>,
    pub(crate) disabled_tools: Keyed<TextList>,
    pub(crate) max_output_tokens: Keyed<Count>,
    /// `false`: the server's tools are not pinned (see `crate::pins`).
    pub(crate) pinning: Keyed<Flag>,
    /// `true`: a tool the scan finds something of high severity in is held, not pinned, on
    /// first sight (see `crate::pins`).
    pub(crate) scan_on_pin: Keyed<Flag>,
    /// For people reading the file; not used.
    #[serde(rename = "description")]
    _description: Skipped,
    /// The MCPB bundle the entry was installed from (read by `config::bundle`).
    #[serde(rename = "bundle")]
    _bundle: Skipped,
    /// Variables whose values are in the secret store (read by `config::load`).
    #[serde(rename = "storedSecrets")]
    _stored_secrets: Skipped,
    pub(crate) log_level: Keyed<Text>,
    // stdio
    pub(crate) command: Keyed<Text>,
    pub(crate) args: Keyed<TextList>,
    pub(crate) env: Keyed<TextMap>,
    pub(crate) cwd: Keyed<Text>,
    // http, sse, ws, proxy
    pub(crate) url: Keyed<Text>,
    pub(crate) headers: Keyed<TextMap>,
    pub(crate) oauth: Keyed<Object<OAuthFile>>,
    pub(crate) headers_helper: Keyed<Text>,
    /// `shared` (the default) or `per-user`: whose OAuth tokens the gateway calls it with.
    pub(crate) credentials: Keyed<Text>,
    // sse-ide, ws-ide
    pub(crate) ide_name: Keyed<Text>,
    pub(crate) lock_file: Keyed<Text>,
    // proxy
    pub(crate) token_env: Keyed<Text>,
    pub(crate) token_command: Keyed<TextList>,
    /// The seeds' host's claude.ai proxy server id (`claudeai-proxy`); kept, unused.
    pub(crate) id: Keyed<Text>,
}

impl ServerFile {
    /// Whether the transport-specific key `name` (see `parse::fields_of`) is written, and
    /// where its key is.
    pub(crate) fn written(&self, name: &str) -> Option<usize> {
        match name {
            "command" => self.command.key(),
            "args" => self.args.key(),
            "env" => self.env.key(),
            "cwd" => self.cwd.key(),
            "url" => self.url.key(),
            "headers" => self.headers.key(),
            "oauth" => self.oauth.key(),
            "headersHelper" => self.headers_helper.key(),
            "credentials" => self.credentials.key(),
            "ideName" => self.ide_name.key(),
            "lockFile" => self.lock_file.key(),
            "tokenEnv" => self.token_env.key(),
            "tokenCommand" => self.token_command.key(),
            "id" => self.id.key(),
            _ => None,
        }
    }
}

/// An entry's `oauth`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct OAuthFile {
    pub(crate) client_id: Keyed<Text>,
    pub(crate) client_secret_env: Keyed<Text>,
    pub(crate) client_secret_keychain: Keyed<Text>,
    pub(crate) callback_port: Keyed<Count>,
    pub(crate) scopes: Keyed<TextList>,
    pub(crate) grant_type: Keyed<Text>,
    pub(crate) private_key_env: Keyed<Text>,
    pub(crate) client_metadata_url: Keyed<Text>,
    /// Cross-App Access (`xaa: true`) and its identity provider.
    pub(crate) xaa: Keyed<Flag>,
    pub(crate) idp_issuer: Keyed<Text>,
    pub(crate) idp_token_endpoint: Keyed<Text>,
    pub(crate) idp_client_id: Keyed<Text>,
    pub(crate) id_token_env: Keyed<Text>,
    /// A workload's JWT for the jwt-bearer grant.
    pub(crate) assertion_env: Keyed<Text>,
    /// RFC 8693: each caller's token exchanged for theirs at the server's authorization
    /// server (per-user credentials).
    pub(crate) token_exchange: Keyed<Flag>,
    /// Endpoints given rather than discovered, and the `resource` parameter (`false`: none).
    pub(crate) authorization_endpoint: Keyed<Text>,
    pub(crate) token_endpoint: Keyed<Text>,
    pub(crate) resource: Keyed<TextOrOff>,
}

/// A string, or `false` (an entry's `oauth.resource`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TextOrOff {
    Text(String),
    Off,
}

impl<'de> Deserialize<'de> for TextOrOff {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match de::expect::<_, serde_json::Value>(d, &["a string", "a boolean"], "a URL, or false")?
        {
            serde_json::Value::String(text) => Ok(TextOrOff::Text(text)),
            serde_json::Value::Bool(false) => Ok(TextOrOff::Off),
            _ => Err(serde::de::Error::custom(
                "expected a URL, or false, found true",
            )),
        }
    }
}

/// A whole entry: an object (`expected an object describing the server` otherwise).
#[derive(Debug, Default)]
pub(crate) struct ServerObject(pub(crate) ServerFile);

impl<'de> Deserialize<'de> for ServerObject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de::expect(d, &["an object"], "an object describing the server").map(ServerObject)
    }
}

/// A string.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Text(pub(crate) String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de::expect(d, &["a string"], "a string").map(Text)
    }
}

/// `true` or `false`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Flag(pub(crate) bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de::expect(d, &["a boolean"], "true or false").map(Flag)
    }
}

/// A positive whole number, as written (checked when the entry is).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Count(pub(crate) String);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de::expect::<_, NumberText>(d, &["a number"], "a positive whole number").map(|n| Count(n.0))
    }
}

/// A list of strings; the first that is not one breaks it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct TextList(pub(crate) Vec<Spanned<Text>>);

impl<'de> Deserialize<'de> for TextList {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de::expect(d, &["an array"], "an array of strings").map(TextList)
    }
}

/// An object of strings (numbers and booleans, common in hand-written `env`, are taken as
/// their text), in written order.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct TextMap(pub(crate) Vec<(String, Spanned<String>)>);

impl<'de> Deserialize<'de> for TextMap {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de::expect::<_, Entries>(d, &["an object"], "an object of strings").map(|e| TextMap(e.0))
    }
}

struct Entries(Vec<(String, Spanned<String>)>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Entries;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of strings")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Entries, A::Error> {
                let mut entries = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, Spanned<Scalar>>()? {
                    entries.push((
                        key,
                        Spanned {
                            offset: value.offset,
                            key: value.key,
                            value: value.value.0,
                        },
                    ));
                }
                Ok(Entries(entries))
            }
        }
        d.deserialize_map(V)
    }
}

/// A string, or a number or boolean as its text (a number as written: `1.0` stays `1.0`).
struct Scalar(String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de::expect::<_, NumberText>(d, &["a string", "a number", "a boolean"], "a string")
            .map(|text| Scalar(text.0))
    }
}
