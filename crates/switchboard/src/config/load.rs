//! Reading every scope and merging it into one [`ConfigSet`].

use std::collections::BTreeMap;
use std::path::PathBuf;

use jsonc_parser::ast;

use super::approval::{Approval, ApprovalStore};

use super::de;
use super::de::Checked;
use super::json::{Document, get, kind_name, prop_name, range_of, to_json};
use super::parse::{ParsedEntry, parse_entry};
use super::plugin::{
    PluginFolder, PluginInfo, PluginPlaces, PluginRecord, ServersDoc, locate, plugin_server_name,
    read_folder,
};
use super::settings::{
    Combine, LocalFile, LocalProject, ManagedFile, ProjectFile, ProjectSettingsFile, ScopeFile,
    ScopeSettings, UserFile,
};
use super::{
    ConfigHash, ConfigIssue, ConfigPaths, Environment, Origin, Policy, PolicyVerdict, Scope,
    ServerConfig, Transport,
};

/// One server as the merged configuration sees it.
#[derive(Debug, Clone)]
pub struct ServerEntry {
    pub name: String,
    pub origin: Origin,
    /// The checked configuration, or the first problem that stops it from being one.
    pub config: Result<ServerConfig, ConfigIssue>,
    /// The entry as written (before `${VAR}` expansion).
    pub raw: serde_json::Value,
    pub hash: ConfigHash,
    pub approval: Approval,
    pub policy: PolicyVerdict,
    /// Entries of the same name in scopes of lower precedence, highest first.
    pub shadowed: Vec<Origin>,
    /// The plugin that provides this entry, if one does.
    pub plugin: Option<String>,
}

impl ServerEntry {
    /// Records that this entry hides `lower`, an entry of the same name of lower precedence.
    fn shadow(&mut self, lower: ServerEntry) {
        self.shadowed.push(lower.origin);
        self.shadowed.extend(lower.shadowed);
    }
}

/// One file's servers by name; merged, the servers of every scope.
#[derive(Debug, Default)]
struct Servers(BTreeMap<String, ServerEntry>);

impl Combine for Servers {
    /// An entry of `self` hides the entry of the same name in `lower`.
    fn combine(&mut self, lower: Servers) {
        for (name, entry) in lower.0 {
            match self.0.get_mut(&name) {
                Some(higher) => higher.shadow(entry),
                None => {
                    self.0.insert(name, entry);
                }
            }
        }
    }
}

/// What stands between an entry and starting it, the first reason that applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryStatus<'a> {
    Ready,
    Invalid(&'a ConfigIssue),
    Denied(&'a str),
    Disabled,
    PendingApproval,
    ChangedSinceApproval,
    Rejected,
}

impl ServerEntry {
    pub fn status(&self) -> EntryStatus<'_> {
        let config = match &self.config {
            Err(issue) => return EntryStatus::Invalid(issue),
            Ok(config) => config,
        };
        if let PolicyVerdict::Denied(reason) = &self.policy {
            return EntryStatus::Denied(reason);
        }
        match self.approval {
            Approval::Pending => return EntryStatus::PendingApproval,
            Approval::Changed => return EntryStatus::ChangedSinceApproval,
            Approval::Rejected => return EntryStatus::Rejected,
            Approval::NotRequired | Approval::Approved => {}
        }
        if config.disabled {
            EntryStatus::Disabled
        } else {
            EntryStatus::Ready
        }
    }

    /// What an approval of this entry is bound to: its hash, and for a project's local
    /// server the program it resolved to when that differs from what is written, so a
    /// different program found first on `PATH` asks again.
    pub fn approval_hash(&self) -> ConfigHash {
        let written = self.raw.get("command").and_then(|c| c.as_str());
        match &self.config {
            Ok(ServerConfig {
                transport: Transport::Stdio(stdio),
                ..
            }) if written != Some(stdio.command.as_str()) => {
                super::parse::bound_hash(&self.hash, &stdio.command)
            }
            _ => self.hash.clone(),
        }
    }

    /// The configuration, when the entry may start.
    pub fn startable(&self) -> Option<&ServerConfig> {
        match self.status() {
            EntryStatus::Ready => self.config.as_ref().ok(),
            _ => None,
        }
    }
}

/// The merged configuration of every scope, with every problem found on the way.
#[derive(Debug, Clone)]
pub struct ConfigSet {
    pub paths: ConfigPaths,
    /// Sorted by name.
    pub servers: Vec<ServerEntry>,
    /// Problems in files and entries (an entry's own blocking problem is also in its `config`).
    pub issues: Vec<ConfigIssue>,
    pub policy: Policy,
    /// What each scope's file holds besides servers (permissions, hooks, sampling, roots), as
    /// read once: managed, user, local, then the project's `.switchboard/settings.json`.
    pub settings: Vec<ScopeSettings>,
    /// The plugins installed in every scope's file, enabled or not.
    pub plugins: Vec<PluginInfo>,
}

impl ConfigSet {
    /// Reads every scope. Never fails as a whole: a broken file or entry becomes an issue and
    /// the rest still loads. Each file is read and parsed once.
    pub fn load(paths: ConfigPaths, env: &Environment) -> ConfigSet {
        Self::load_with(paths, env, false)
    }

    /// Reads only the `--mcp-config` sources ([`ConfigPaths::dynamic`]): no managed, user,
    /// local or project file, nor their settings, policy or approvals. For a program whose own
    /// configuration is the whole configuration
    /// ([`HostBuilder::isolated`](crate::HostBuilder::isolated)).
    pub fn load_isolated(paths: ConfigPaths, env: &Environment) -> ConfigSet {
        Self::load_with(paths, env, true)
    }

    fn load_with(paths: ConfigPaths, env: &Environment, isolated: bool) -> ConfigSet {
        let mut loader = Loader {
            env,
            secrets: crate::secrets::SecretStore::from_env(&paths.state_dir, env),
            state_dir: paths.state_dir.clone(),
            places: PluginPlaces {
                state_dir: paths.state_dir.clone(),
                project_root: paths.project_root.clone(),
                cwd: paths.cwd.clone(),
                user_file: (!isolated).then(|| paths.user_file()),
            },
            issues: Vec::new(),
            layers: Vec::new(),
            plugins: Vec::new(),
            data_dirs: Vec::new(),
        };

        // The managed file is read first for its policy; its entries merge last, so they win.
        let mut policy = Policy::default();
        let mut managed_settings = ScopeSettings::new(Scope::Managed, paths.managed_file.clone());
        let read = if isolated {
            Ok(None)
        } else {
            Document::read(&paths.managed_file)
        };
        let managed = match read {
            Ok(doc) => doc,
            Err(issue) => {
                loader.issues.push(issue.clone());
                managed_settings.broken = Some(issue);
                policy = Policy::fail_closed();
                None
            }
        };
        let managed_root = match managed.as_ref().map(Document::root_value) {
            None | Some(Ok(None)) => None,
            Some(Err(issue)) => {
                loader.issues.push(issue.clone());
                managed_settings.broken = Some(issue);
                policy = Policy::fail_closed();
                None
            }
            Some(Ok(Some(root))) => Some(root),
        };
        let managed_file = match (&managed, &managed_root) {
            (Some(doc), Some(root)) => {
                let read = de::from_ast::<ManagedFile>(doc, root, "");
                policy = match &read {
                    Ok(file) => Policy::from_file(
                        &doc.path,
                        &file.value.policy,
                        &file.errors,
                        &file.unknown,
                    )
                    .unwrap_or_else(|issue| {
                        loader.issues.push(issue);
                        Policy::fail_closed()
                    }),
                    Err(_) => Policy::fail_closed(),
                };
                Some((doc, root, read))
            }
            _ => None,
        };

        let key = paths.project_key();
        let (user, local) = if isolated {
            (
                ScopeSettings::new(Scope::User, paths.user_file()),
                ScopeSettings::new(Scope::Local, paths.local_file()),
            )
        } else {
            let user = loader.read_own_file::<UserFile>(&paths.user_file(), Scope::User, &[]);
            for file in paths.project_files.iter().rev() {
                loader.read_file::<ProjectFile>(file, Scope::Project, &[]);
            }
            let local = loader.read_own_file::<LocalFile>(
                &paths.local_file(),
                Scope::Local,
                &["projects", &key],
            );
            (user, local)
        };
        for spec in &paths.dynamic {
            match load_dynamic_text(spec, &paths.cwd) {
                Ok(doc) => {
                    loader.read_doc::<ProjectFile>(&doc, Scope::Dynamic, &[]);
                }
                Err(issue) => loader.issues.push(issue),
            }
        }
        if let Some((doc, root, read)) = managed_file {
            managed_settings = loader.take_root(doc, root, read, Scope::Managed, &[]);
        }
        let project = if isolated {
            ScopeSettings::new(Scope::Project, paths.project_settings_file())
        } else {
            read_project_settings(&paths.project_settings_file())
        };

        let approvals = match (!isolated).then(|| ApprovalStore::load(&paths.approvals_file())) {
            Some(Ok(store)) => Some(store),
            Some(Err(issue)) => {
                loader.issues.push(issue);
                None
            }
            None => None,
        };
        // Each file's servers, from the highest precedence down.
        let merged = loader
            .layers
            .into_iter()
            .rev()
            .reduce(|mut higher, lower| {
                higher.combine(lower);
                higher
            })
            .unwrap_or_default();
        let servers = merged
            .0
            .into_values()
            .map(|mut entry| {
                if entry.origin.scope == Scope::Project {
                    entry.approval = approvals.as_ref().map_or(Approval::Pending, |a| {
                        a.approval(&key, &entry.name, &entry.approval_hash())
                    });
                }
                if let Ok(config) = &entry.config {
                    entry.policy = policy.verdict(config);
                }
                entry
            })
            .collect();
        let mut servers: Vec<ServerEntry> = servers;
        make_data_dirs(&loader.data_dirs, &servers, &mut loader.issues);
        apply_user_defaults(&user, &mut servers, &mut loader.issues);
        ConfigSet {
            paths,
            servers,
            issues: loader.issues,
            policy,
            settings: vec![managed_settings, user, local, project],
            plugins: loader.plugins,
        }
    }

    /// What a scope's file holds besides servers (the project's: `.switchboard/settings.json`).
    pub fn settings(&self, scope: Scope) -> Option<&ScopeSettings> {
        self.settings.iter().find(|s| s.scope == scope)
    }

    /// The entry named `name`; a plugin's server also as `plugin:<plugin>:<server>`.
    pub fn get(&self, name: &str) -> Option<&ServerEntry> {
        let plugin_name = name
            .strip_prefix("plugin:")
            .and_then(|rest| rest.split_once(':'))
            .map(|(plugin, server)| plugin_server_name(plugin, server));
        let name = plugin_name.as_deref().unwrap_or(name);
        self.servers.iter().find(|e| e.name == name)
    }

    /// The configurations of every server that may start now.
    pub fn startable(&self) -> impl Iterator<Item = &ServerConfig> {
        self.servers.iter().filter_map(ServerEntry::startable)
    }

    pub fn has_errors(&self) -> bool {
        self.issues.iter().any(ConfigIssue::is_error)
    }
}

/// Makes the data folders plugins' files name, for the plugins whose servers may start: a
/// project's plugin only once one of its servers is approved (nothing an unapproved project
/// file says touches the disk).
fn make_data_dirs(dirs: &[DataDir], servers: &[ServerEntry], issues: &mut Vec<ConfigIssue>) {
    for data in dirs {
        let may_start = data.scope != Scope::Project
            || servers.iter().any(|e| {
                e.origin.scope == Scope::Project
                    && e.plugin.as_deref() == Some(data.plugin.as_str())
                    && e.approval.allows_start()
            });
        if may_start && let Err(issue) = super::plugin::create_data_dir(&data.dir, &data.file) {
            let message = format!("plugin `{}`: {}", data.plugin, issue.message);
            issues.push(ConfigIssue { message, ..issue });
        }
    }
}

/// The user file's `startup` and `idleTimeout`: every entry's unless it says otherwise. A
/// broken value is an issue of the user file, and no default.
fn apply_user_defaults(
    user: &ScopeSettings,
    servers: &mut [ServerEntry],
    issues: &mut Vec<ConfigIssue>,
) {
    for field in [
        "startup",
        "idleTimeout",
        "registryUrl",
        "pinning",
        "scanOnPin",
    ] {
        if let Some(error) = user.error_at(field) {
            issues.push(error.issue(&user.file));
        }
    }
    let startup = match &user.sections.startup {
        Checked::Ok(value) => Some(value.0),
        _ => None,
    };
    let idle = match &user.sections.idle_timeout {
        Checked::Ok(value) => Some(std::time::Duration::from_secs(value.0)),
        _ => None,
    };
    if startup.is_none() && idle.is_none() {
        return;
    }
    for entry in servers {
        let written = |key: &str| entry.raw.get(key).is_some();
        let (startup_written, idle_written) = (written("startup"), written("idleTimeout"));
        if let Ok(config) = &mut entry.config {
            if let (Some(startup), false) = (startup, startup_written) {
                config.startup = startup;
            }
            if let (Some(idle), false) = (idle, idle_written) {
                config.idle_timeout = Some(idle);
            }
        }
    }
}

/// Reads one `--mcp-config` argument: inline JSON when it starts with `{`, else a file path
/// (relative to `cwd`).
fn load_dynamic_text(spec: &str, cwd: &std::path::Path) -> Result<Document, ConfigIssue> {
    if spec.trim_start().starts_with('{') {
        return Ok(Document::new(
            PathBuf::from("<--mcp-config>"),
            spec.to_owned(),
        ));
    }
    let path = cwd.join(spec);
    Document::read(&path)?
        .ok_or_else(|| ConfigIssue::error("the --mcp-config file does not exist").in_file(path))
}

/// A project's `.switchboard/settings.json`: permissions and hooks only, and no servers, so
/// its problems are the permissions' to report.
fn read_project_settings(path: &std::path::Path) -> ScopeSettings {
    let mut settings = ScopeSettings::new(Scope::Project, path.to_owned());
    let doc = match Document::read(path) {
        Ok(Some(doc)) => doc,
        Ok(None) => return settings,
        Err(issue) => {
            settings.broken = Some(issue);
            return settings;
        }
    };
    match doc.root_value() {
        Ok(Some(root)) => match de::from_ast::<ProjectSettingsFile>(&doc, &root, "") {
            Ok(file) => {
                settings.sections = file.value.sections();
                settings.errors = file.errors;
                settings.unknown = file.unknown;
            }
            Err(e) => settings.broken = Some(e.issue(&doc.path)),
        },
        Ok(None) => {}
        Err(issue) => settings.broken = Some(issue),
    }
    settings
}

struct Loader<'e> {
    env: &'e Environment,
    /// The state folder (plugins' data folders are under it).
    state_dir: PathBuf,
    /// Where a plugin's record may put it on this machine.
    places: PluginPlaces,
    /// Where a bundle's sensitive `user_config` values are (read only for such entries).
    secrets: crate::secrets::SecretStore,
    issues: Vec<ConfigIssue>,
    /// Each file's servers, in the order read (by rising precedence).
    layers: Vec<Servers>,
    plugins: Vec<PluginInfo>,
    /// The data folders enabled plugins' files name, made once approvals are known.
    data_dirs: Vec<DataDir>,
}

/// A plugin's data folder one of its files names (`${CLAUDE_PLUGIN_DATA}`).
struct DataDir {
    plugin: String,
    scope: Scope,
    dir: PathBuf,
    /// The file that names it.
    file: PathBuf,
}

impl Loader<'_> {
    /// [`Loader::read_file`] for a file of the user's own (the user's and the local file):
    /// its entries run without approval, so one another user could have written (its folder
    /// or itself theirs, or writable by others) is not read, and is an error.
    fn read_own_file<F: ScopeFile>(
        &mut self,
        path: &std::path::Path,
        scope: Scope,
        nest: &[&str],
    ) -> ScopeSettings {
        let Some((at, why)) = crate::secrets::untrusted_file(path) else {
            return self.read_file::<F>(path, scope, nest);
        };
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let what = if at == path {
            "not read (its servers would run without approval)".to_owned()
        } else {
            format!("`{name}` in this folder is not read (its servers would run without approval)")
        };
        let issue = ConfigIssue::untrusted(&at, &what, why);
        self.issues.push(issue.clone());
        ScopeSettings {
            broken: Some(issue),
            ..ScopeSettings::new(scope, path.to_owned())
        }
    }

    fn read_file<F: ScopeFile>(
        &mut self,
        path: &std::path::Path,
        scope: Scope,
        nest: &[&str],
    ) -> ScopeSettings {
        match Document::read(path) {
            Err(issue) => {
                self.issues.push(issue.clone());
                ScopeSettings {
                    broken: Some(issue),
                    ..ScopeSettings::new(scope, path.to_owned())
                }
            }
            Ok(None) => ScopeSettings::new(scope, path.to_owned()),
            Ok(Some(doc)) => self.read_doc::<F>(&doc, scope, nest),
        }
    }

    fn read_doc<F: ScopeFile>(
        &mut self,
        doc: &Document,
        scope: Scope,
        nest: &[&str],
    ) -> ScopeSettings {
        match doc.root_value() {
            Ok(Some(root)) => {
                self.issues.extend(super::json::duplicate_keys(doc, &root));
                self.read_root::<F>(doc, &root, scope, nest)
            }
            Ok(None) => ScopeSettings::new(scope, doc.path.clone()),
            Err(issue) => {
                self.issues.push(issue.clone());
                ScopeSettings {
                    broken: Some(issue),
                    ..ScopeSettings::new(scope, doc.path.clone())
                }
            }
        }
    }

    /// Reads a parsed document: its settings into `F`, the file's struct (which says which
    /// top-level keys it knows; others are warned about), and the servers of its
    /// `mcpServers` object, found under the `nest` keys (`projects/<root>` in the local file).
    fn read_root<F: ScopeFile>(
        &mut self,
        doc: &Document,
        root: &ast::Value<'_>,
        scope: Scope,
        nest: &[&str],
    ) -> ScopeSettings {
        let read = de::from_ast::<F>(doc, root, "");
        self.take_root(doc, root, read, scope, nest)
    }

    /// [`Loader::read_root`] once `F` is read.
    fn take_root<F: ScopeFile>(
        &mut self,
        doc: &Document,
        root: &ast::Value<'_>,
        read: Result<de::Read<F>, de::Error>,
        scope: Scope,
        nest: &[&str],
    ) -> ScopeSettings {
        let mut settings = ScopeSettings::new(scope, doc.path.clone());
        // The sections' own problems are reported by the modules that build on them.
        match read {
            Ok(file) => {
                for unknown in file.unknown.iter().filter(|u| u.field == u.key) {
                    self.issues.push(
                        ConfigIssue::warning("unknown field; kept as written and ignored")
                            .in_file(&doc.path)
                            .at(unknown.position)
                            .field(unknown.key.clone()),
                    );
                }
                settings.sections = file.value.sections();
                settings.errors = file.errors;
                settings.unknown = file.unknown;
            }
            Err(e) => self.issues.push(e.issue(&doc.path)),
        }
        self.read_plugins(doc, root, scope, nest);
        self.read_servers(doc, root, &mut settings, nest);
        settings
    }

    /// The plugins recorded under `plugins` (below the `nest` keys): each enabled plugin's
    /// servers become a layer just below the file's own entries.
    fn read_plugins(&mut self, doc: &Document, root: &ast::Value<'_>, scope: Scope, nest: &[&str]) {
        let mut value = root;
        for key in nest {
            match value {
                ast::Value::Object(obj) => match get(obj, key) {
                    Some(prop) => value = &prop.value,
                    None => return,
                },
                _ => return,
            }
        }
        let ast::Value::Object(obj) = value else {
            return;
        };
        let prefix: String = nest.iter().map(|k| format!("{k}.")).collect();
        let plugins = match get(obj, "plugins").map(|p| &p.value) {
            None => return,
            Some(ast::Value::Object(plugins)) => plugins,
            Some(other) => {
                let issue = self.not_object(doc, other, &format!("{prefix}plugins"));
                return self.issues.push(issue);
            }
        };
        for prop in &plugins.properties {
            let name = prop_name(prop);
            // The name becomes a folder's (`plugin-data/<name>`) and a server name's part: a
            // record key that is no server name (`../..`) is refused before anything reads it.
            if let Err(e) = super::ServerName::new(name) {
                let issue = ConfigIssue::error(format!(
                    "plugin name `{name}` is not a valid name: {}",
                    e.reason
                ))
                .in_file(&doc.path)
                .at(doc.position(prop.range.start))
                .field(format!("{prefix}plugins.{name}"));
                self.issues.push(match e.suggestion {
                    Some(s) => issue.hint(format!("rename the record, for example to `{s}`")),
                    None => issue.hint("remove the record"),
                });
                continue;
            }
            let record = match serde_json::from_value::<PluginRecord>(to_json(&prop.value)) {
                Ok(record) => record,
                Err(e) => {
                    self.issues.push(
                        ConfigIssue::error(format!("plugin `{name}`: {e}"))
                            .in_file(&doc.path)
                            .at(doc.position(prop.range.start))
                            .field(format!("{prefix}plugins.{name}")),
                    );
                    continue;
                }
            };
            // Where it is on this machine: a project's record names no path of the machine
            // that wrote it.
            let field = format!("{prefix}plugins.{name}");
            let located = locate(&self.places, scope, &doc.path, name, &field, &record);
            let data = super::plugin::plugin_data_dir(&self.state_dir, name);
            let present = located.problem.is_none() && located.path.is_dir();
            let folder = match located.problem {
                None => read_folder(name, &located.path, &data),
                Some(issue) => PluginFolder {
                    issues: vec![issue],
                    ..PluginFolder::default()
                },
            };
            let mut info = PluginInfo {
                name: name.to_owned(),
                scope,
                file: doc.path.clone(),
                source: record.source,
                present,
                path: located.path,
                marketplace_url: record.marketplace,
                enabled: record.enabled,
                version: record.version,
                description: None,
                servers: Vec::new(),
                disabled_servers: record.disabled_servers,
            };
            info.description = folder.description;
            if info.version.is_none() {
                info.version = folder.version;
            }
            if record.enabled {
                for issue in folder.issues {
                    self.issues.push(match issue.file {
                        Some(_) => issue,
                        None => issue.in_file(&doc.path).at(doc.position(prop.range.start)),
                    });
                }
                for servers_doc in &folder.docs {
                    let mut servers = self.plugin_servers(servers_doc, scope, name);
                    // Servers the user disabled one by one: disabled as an entry's
                    // `"disabled": true` would (its hash, hence its approval, unchanged).
                    for (server, entry) in &mut servers.0 {
                        if info.disabled_servers.contains(server)
                            && let Ok(config) = &mut entry.config
                        {
                            config.disabled = true;
                        }
                    }
                    info.servers.extend(servers.0.keys().cloned());
                    self.layers.push(servers);
                }
                if let Some(file) = folder.data_named {
                    self.data_dirs.push(DataDir {
                        plugin: name.to_owned(),
                        scope,
                        dir: data,
                        file,
                    });
                }
            }
            self.plugins.push(info);
        }
    }

    /// The servers of one of a plugin's files.
    fn plugin_servers(&mut self, file: &ServersDoc, scope: Scope, plugin: &str) -> Servers {
        let doc = &file.doc;
        let root = match doc.root_value() {
            Ok(Some(root)) => {
                self.issues.extend(super::json::duplicate_keys(doc, &root));
                root
            }
            Ok(None) => return Servers::default(),
            Err(issue) => {
                let message = format!("plugin `{plugin}`: {}", issue.message);
                self.issues.push(ConfigIssue { message, ..issue });
                return Servers::default();
            }
        };
        let ast::Value::Object(obj) = &root else {
            return Servers::default();
        };
        let servers = match file.key {
            None => obj,
            Some(key) => match get(obj, key).map(|p| &p.value) {
                Some(ast::Value::Object(servers)) => servers,
                None => return Servers::default(),
                Some(other) => {
                    let issue = self.not_object(doc, other, key);
                    let message = format!("plugin `{plugin}`: {}", issue.message);
                    self.issues.push(ConfigIssue { message, ..issue });
                    return Servers::default();
                }
            },
        };
        self.entries(doc, &servers.properties, scope, Some(plugin))
    }

    fn read_servers(
        &mut self,
        doc: &Document,
        root: &ast::Value<'_>,
        settings: &mut ScopeSettings,
        nest: &[&str],
    ) {
        let scope = settings.scope;
        let ast::Value::Object(root) = root else {
            return;
        };
        let mut obj = root;
        let mut path = String::new();
        for (i, key) in nest.iter().enumerate() {
            path.push_str(if path.is_empty() { "" } else { "." });
            path.push_str(key);
            match get(obj, key).map(|p| &p.value) {
                None => return,
                Some(value @ ast::Value::Object(inner)) => {
                    obj = inner;
                    if i + 1 == nest.len() {
                        self.read_nested(doc, value, &path, settings);
                    }
                }
                Some(other) => {
                    let issue = self.not_object(doc, other, &path);
                    settings.broken = Some(issue.clone());
                    return self.issues.push(issue);
                }
            }
        }
        let servers = match get(obj, "mcpServers").map(|p| &p.value) {
            None => return,
            Some(ast::Value::Object(servers)) => servers,
            Some(other) => {
                let field = if path.is_empty() {
                    "mcpServers".to_owned()
                } else {
                    format!("{path}.mcpServers")
                };
                return self.issues.push(self.not_object(doc, other, &field));
            }
        };
        let servers = self.entries(doc, &servers.properties, scope, None);
        self.layers.push(servers);
    }

    /// One file's entries (`plugin`: named `plugin_<plugin>_<server>`).
    fn entries(
        &mut self,
        doc: &Document,
        props: &[ast::ObjectProp<'_>],
        scope: Scope,
        plugin: Option<&str>,
    ) -> Servers {
        let mut servers = Servers::default();
        for prop in props {
            let written = prop_name(prop);
            let plugin_name = plugin.map(|p| plugin_server_name(p, written));
            let name = plugin_name.as_deref().unwrap_or(written);
            let origin = Origin {
                scope,
                file: Some(doc.path.clone()),
            };
            // A bundle's entry: its sensitive values from the secret store. Never for a
            // project's file: it comes with a repository, which could name another bundle's
            // secrets to send them elsewhere.
            let bundle_env = match &prop.value {
                ast::Value::Object(obj) if scope != Scope::Project => {
                    get(obj, super::bundle::BUNDLE_KEY).and_then(|b| {
                        super::bundle::entry_environment(
                            &to_json(&b.value),
                            self.env,
                            &self.secrets,
                        )
                    })
                }
                _ => None,
            };
            if let Some((_, Some(problem))) = &bundle_env {
                self.issues.push(
                    ConfigIssue::warning(format!(
                        "the bundle's sensitive values cannot be read: {problem}"
                    ))
                    .in_file(&doc.path)
                    .server(name),
                );
            }
            // Variables whose values the user stored (a Registry server's secret inputs):
            // from the user's own files only, and never for a plugin's entries.
            let stored_vars = match &prop.value {
                ast::Value::Object(obj) => get(obj, crate::secrets::STORED_SECRETS_KEY)
                    .map(|v| crate::secrets::stored_secret_vars(&to_json(&v.value)))
                    .unwrap_or_default(),
                _ => Vec::new(),
            };
            let reads_stored = plugin.is_none() && crate::secrets::reads_stored_secrets(scope);
            if !stored_vars.is_empty() && !reads_stored {
                self.issues.push(
                    ConfigIssue::warning(format!(
                        "`{}` is ignored in {scope} scope: only the user's own files may read stored secrets",
                        crate::secrets::STORED_SECRETS_KEY
                    ))
                    .in_file(&doc.path)
                    .server(name),
                );
            }
            let stored_env = (!stored_vars.is_empty() && reads_stored).then(|| {
                let base = bundle_env.as_ref().map_or(self.env, |(env, _)| env);
                let (env, problem) =
                    crate::secrets::stored_environment(&self.secrets, name, &stored_vars, base);
                if let Some((var, e)) = problem {
                    self.issues.push(
                        ConfigIssue::warning(format!(
                            "the stored value of `{var}` cannot be read: {e}"
                        ))
                        .in_file(&doc.path)
                        .server(name),
                    );
                }
                env
            });
            let env = match &stored_env {
                Some(env) => env,
                None => bundle_env.as_ref().map_or(self.env, |(env, _)| env),
            };
            let ParsedEntry {
                config,
                warnings,
                raw,
                hash,
            } = parse_entry(
                doc,
                name,
                doc.position(prop.range.start),
                &prop.value,
                origin.clone(),
                env,
                plugin.is_some(),
            );
            self.issues.extend(warnings);
            if let Err(issue) = &config {
                self.issues.push(issue.clone());
            }
            let mut entry = ServerEntry {
                name: name.to_owned(),
                origin,
                config,
                raw,
                hash,
                approval: Approval::NotRequired,
                policy: PolicyVerdict::Allowed,
                shadowed: Vec::new(),
                plugin: plugin.map(str::to_owned),
            };
            // A name written twice in one file: the last one counts, as JSON parsers do.
            if let Some(previous) = servers.0.remove(name) {
                entry.shadow(previous);
            }
            servers.0.insert(name.to_owned(), entry);
        }
        servers
    }

    /// The settings of one project's entry in the local file (`projects.<root>`).
    fn read_nested(
        &mut self,
        doc: &Document,
        value: &ast::Value<'_>,
        path: &str,
        settings: &mut ScopeSettings,
    ) {
        match de::from_ast::<LocalProject>(doc, value, path) {
            Ok(project) => {
                settings.prefix = format!("{path}.");
                settings.sections = project.value.sections();
                settings.errors = project.errors;
                settings.unknown = project.unknown;
            }
            Err(e) => settings.broken = Some(e.issue(&doc.path)),
        }
    }

    fn not_object(&self, doc: &Document, value: &ast::Value<'_>, field: &str) -> ConfigIssue {
        ConfigIssue::error(format!("expected an object, found {}", kind_name(value)))
            .in_file(&doc.path)
            .at(doc.position(range_of(value).start))
            .field(field)
    }
}
