//! Plugins: folders laid out as Claude Code's plugins are, whose MCP servers join the
//! configuration of the scope they are installed in.
//!
//! A plugin is recorded in a scope's file under `plugins.<name>` (`source`, `path`, `enabled`,
//! `version`); a plugin from a git repository (a URL, or a local path to a repository) is
//! cloned under the state directory (`plugins/<name>`), a plain folder is used where it is.
//! Its servers come from `.claude-plugin/plugin.json`'s `mcpServers` (inline, or a path to a
//! JSON file) and from a `.mcp.json` at its root (`{"mcpServers": {...}}` or a bare map), each
//! read only when it is inside the plugin's folder once links are resolved (no absolute
//! path, no `..` or link out of it), with
//! `${CLAUDE_PLUGIN_ROOT}` and `${PLUGIN_ROOT}` replaced by the plugin's folder and
//! `${CLAUDE_PLUGIN_DATA}` and `${PLUGIN_DATA}` by its data folder (`<state dir>/plugin-data/
//! <plugin>`, kept across updates, removed with the plugin; made when its servers may start, a
//! project's plugin's once one is approved: reading touches nothing). A record's key must be a
//! valid server name (it names folders); others are refused as issues. Each server is
//! named `plugin_<plugin>_<server>` (sanitised as server names are), so its tools are
//! `mcp__plugin_<plugin>_<server>__<tool>`; entries keep their scope, so a project's plugin
//! servers wait for approval and managed policy applies to them as to any other entry.
//!
//! A marketplace is a folder or repository with `.claude-plugin/marketplace.json` listing
//! plugins (`{"name", "plugins": [{"name", "source"}]}`), recorded in the user's file under
//! `marketplaces.<name>` (listed and removed with `list_marketplaces`, `remove_marketplace`);
//! `NAME@MARKETPLACE` installs one of its plugins. A source may be a URL with credentials:
//! what shows it redacts it.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

use super::edit::ConfigEdit;
use super::json::Document;
use super::{ConfigError, ConfigIssue, ConfigPaths, Scope, ServerName};

/// The manifest's folder and file, relative to a plugin's root.
pub const MANIFEST: &str = ".claude-plugin/plugin.json";
/// A marketplace's list of plugins, relative to its root.
pub const MARKETPLACE: &str = ".claude-plugin/marketplace.json";

/// One installed plugin, as a scope's file records it and its folder describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginInfo {
    pub name: String,
    pub scope: Scope,
    /// The settings file that records it.
    pub file: PathBuf,
    /// What it was added from (a path, a URL, or `NAME@MARKETPLACE`).
    pub source: String,
    /// Its folder.
    pub path: PathBuf,
    pub enabled: bool,
    pub version: Option<String>,
    pub description: Option<String>,
    /// The names of the servers it provides (when enabled and readable).
    pub servers: Vec<String>,
}

/// A plugin's record in a scope's file.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct PluginRecord {
    #[serde(default)]
    pub(crate) source: String,
    pub(crate) path: PathBuf,
    #[serde(default = "yes")]
    pub(crate) enabled: bool,
    #[serde(default)]
    pub(crate) version: Option<String>,
}

fn yes() -> bool {
    true
}

/// `.claude-plugin/plugin.json`: what Switchboard reads of it.
#[derive(Debug, Default, Deserialize)]
struct Manifest {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

/// A file of a plugin's servers, its `${CLAUDE_PLUGIN_ROOT}` already replaced; `key` names the
/// object holding the servers (`None`: the servers are the file's top-level map).
#[derive(Debug)]
pub(crate) struct ServersDoc {
    pub(crate) doc: Document,
    pub(crate) key: Option<&'static str>,
}

/// What a plugin's folder provides: its manifest's details and its server files, plus every
/// problem found (each naming the plugin, the file and the field).
#[derive(Debug, Default)]
pub(crate) struct PluginFolder {
    pub(crate) version: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) docs: Vec<ServersDoc>,
    pub(crate) issues: Vec<ConfigIssue>,
    /// The first file that names the data folder (`${CLAUDE_PLUGIN_DATA}`), if one does:
    /// the folder is to be made before its servers start.
    pub(crate) data_named: Option<PathBuf>,
}

/// The name a plugin's server gets in the configuration.
pub fn plugin_server_name(plugin: &str, server: &str) -> String {
    ServerName::sanitize(&format!("plugin_{plugin}_{server}"))
}

/// A plugin's own data folder (`${CLAUDE_PLUGIN_DATA}`): `<state dir>/plugin-data/<plugin>`,
/// kept across updates, removed with the plugin.
pub fn plugin_data_dir(state_dir: &Path, plugin: &str) -> PathBuf {
    state_dir.join("plugin-data").join(plugin)
}

/// The inside of a JSON string holding `path`.
fn json_inner(path: &Path) -> String {
    let quoted = serde_json::to_string(&path.to_string_lossy()).unwrap_or_default();
    quoted
        .strip_prefix('"')
        .and_then(|q| q.strip_suffix('"'))
        .unwrap_or_default()
        .to_owned()
}

/// The most a plugin's manifest or servers file may hold.
const MAX_PLUGIN_FILE: u64 = 1 << 20;

/// Reads a plugin's text file with its variables replaced: `${CLAUDE_PLUGIN_ROOT}` and
/// `${PLUGIN_ROOT}` by its folder, `${CLAUDE_PLUGIN_DATA}` and `${PLUGIN_DATA}` by its data
/// folder. Reading touches nothing on disk: the data folder a file names is made by whoever
/// may start its servers ([`PluginFolder::data_named`]).
fn read_expanded(
    path: &Path,
    root: &Path,
    data: &Path,
    data_named: &mut Option<PathBuf>,
) -> Result<Option<Document>, ConfigIssue> {
    // Read at every command: a plugin's manifest or servers file is a few kilobytes, and one
    // of hundreds of megabytes cost every command seconds and gigabytes.
    if let Ok(meta) = std::fs::metadata(path)
        && meta.len() > MAX_PLUGIN_FILE
    {
        return Err(ConfigIssue::error(format!(
            "the file is larger than {} KiB, the most a plugin's file may be ({} bytes)",
            MAX_PLUGIN_FILE >> 10,
            meta.len()
        ))
        .in_file(path));
    }
    let Some(mut text) = super::json::read_text(path)? else {
        return Ok(None);
    };
    let inner = json_inner(root);
    text = text
        .replace("${CLAUDE_PLUGIN_ROOT}", &inner)
        .replace("${PLUGIN_ROOT}", &inner);
    if text.contains("${CLAUDE_PLUGIN_DATA}") || text.contains("${PLUGIN_DATA}") {
        data_named.get_or_insert_with(|| path.to_owned());
        let inner = json_inner(data);
        text = text
            .replace("${CLAUDE_PLUGIN_DATA}", &inner)
            .replace("${PLUGIN_DATA}", &inner);
    }
    Ok(Some(Document::new(path.to_owned(), text)))
}

/// Makes a plugin's data folder (owner-only), which `file` names; the problem as an issue of
/// that file.
pub(crate) fn create_data_dir(data: &Path, file: &Path) -> Result<(), ConfigIssue> {
    super::edit::create_private_dir(data).map_err(|e| {
        ConfigIssue::warning(format!(
            "cannot create the plugin's data folder {}: {e}",
            data.display()
        ))
        .in_file(file)
    })
}

/// What a file a plugin's folder provides must be.
const INSIDE_HINT: &str =
    "a plugin's files must be inside its folder (links out of it are refused)";

/// Why `path` may not be read as one of the plugin's files (`real_root`: its folder, links
/// resolved): it leads out of the folder once links are resolved, or is a link that leads
/// nowhere. `None` when it is inside, or absent (its reader says so).
fn leads_out(real_root: &Path, path: &Path) -> Option<String> {
    std::fs::symlink_metadata(path).ok()?;
    match path.canonicalize() {
        Ok(real) if real.starts_with(real_root) => None,
        Ok(real) => Some(format!(
            "leads out of the plugin's folder (to {})",
            real.display()
        )),
        Err(e) => Some(format!("is a link that cannot be followed: {e}")),
    }
}

/// Reads a plugin's manifest and server files (`data`: its data folder), each only when it is
/// inside the plugin's folder once links are resolved. Never fails as a whole.
pub(crate) fn read_folder(plugin: &str, root: &Path, data: &Path) -> PluginFolder {
    let mut out = PluginFolder::default();
    let named = |issue: ConfigIssue| {
        let message = format!("plugin `{plugin}`: {}", issue.message);
        ConfigIssue { message, ..issue }
    };
    if !root.is_dir() {
        out.issues.push(
            ConfigIssue::error(format!(
                "plugin `{plugin}`: its folder {} does not exist",
                root.display()
            ))
            .field(format!("plugins.{plugin}.path"))
            .hint(format!(
                "run `switchboard plugin remove {plugin}`, then add it again"
            )),
        );
        return out;
    }
    // Every file is read only where it really is inside the folder: a link (or a path) out of
    // it would make another file the plugin's.
    let real_root = root.canonicalize().unwrap_or_else(|_| root.to_owned());
    let manifest_path = root.join(MANIFEST);
    let manifest = match leads_out(&real_root, &manifest_path) {
        Some(why) => Err(ConfigIssue::error(format!("{MANIFEST} {why}"))
            .in_file(&manifest_path)
            .hint(INSIDE_HINT)),
        None => read_expanded(&manifest_path, root, data, &mut out.data_named),
    };
    match manifest {
        Err(issue) => out.issues.push(named(issue)),
        Ok(None) => {}
        Ok(Some(doc)) => match serde_json::from_str::<serde_json::Value>(&strip_jsonc(&doc)) {
            Err(e) => out.issues.push(
                ConfigIssue::error(format!("plugin `{plugin}`: invalid JSON: {e}"))
                    .in_file(&manifest_path),
            ),
            Ok(value) => {
                match serde_json::from_value::<Manifest>(value.clone()) {
                    Ok(manifest) => {
                        out.version = manifest.version;
                        out.description = manifest.description;
                    }
                    Err(e) => out.issues.push(
                        ConfigIssue::error(format!("plugin `{plugin}`: {e}"))
                            .in_file(&manifest_path),
                    ),
                }
                match value.get("mcpServers") {
                    None => {}
                    Some(serde_json::Value::Object(_)) => out.docs.push(ServersDoc {
                        doc,
                        key: Some("mcpServers"),
                    }),
                    Some(serde_json::Value::String(written)) => {
                        let file = root.join(written);
                        let why = if Path::new(written).is_absolute() {
                            Some("is an absolute path".to_owned())
                        } else {
                            leads_out(&real_root, &file)
                        };
                        let read = match why {
                            Some(why) => Err(ConfigIssue::error(format!(
                                "the servers file `{written}` {why}"
                            ))
                            .in_file(&manifest_path)
                            .field("mcpServers")
                            .hint(INSIDE_HINT)),
                            None => read_expanded(&file, root, data, &mut out.data_named),
                        };
                        match read {
                            Ok(Some(doc)) => out.docs.push(ServersDoc {
                                key: servers_key(&doc),
                                doc,
                            }),
                            Ok(None) => out.issues.push(
                                ConfigIssue::error(format!(
                                    "plugin `{plugin}`: the servers file {} does not exist",
                                    file.display()
                                ))
                                .in_file(&manifest_path)
                                .field("mcpServers"),
                            ),
                            Err(issue) => out.issues.push(named(issue)),
                        }
                    }
                    Some(other) => out.issues.push(
                        ConfigIssue::error(format!(
                            "plugin `{plugin}`: expected an object or a file path, found {}",
                            json_kind(other)
                        ))
                        .in_file(&manifest_path)
                        .field("mcpServers"),
                    ),
                }
            }
        },
    }
    let servers_path = root.join(".mcp.json");
    let servers = match leads_out(&real_root, &servers_path) {
        Some(why) => Err(ConfigIssue::error(format!(".mcp.json {why}"))
            .in_file(&servers_path)
            .hint(INSIDE_HINT)),
        None => read_expanded(&servers_path, root, data, &mut out.data_named),
    };
    match servers {
        Err(issue) => out.issues.push(named(issue)),
        Ok(None) => {}
        Ok(Some(doc)) => out.docs.push(ServersDoc {
            key: servers_key(&doc),
            doc,
        }),
    }
    out
}

/// `Some("mcpServers")` when the file holds an `mcpServers` key, else `None` (a bare map).
fn servers_key(doc: &Document) -> Option<&'static str> {
    match doc.root_object() {
        Ok(Some(obj)) if super::json::get(&obj, "mcpServers").is_some() => Some("mcpServers"),
        Ok(Some(_)) => None,
        _ => Some("mcpServers"),
    }
}

/// A document's value as plain JSON (comments dropped), for the manifest's own fields.
fn strip_jsonc(doc: &Document) -> String {
    match doc.parse() {
        Ok(Some(value)) => super::json::to_json(&value).to_string(),
        Ok(None) => "{}".to_owned(),
        Err(_) => doc.text.clone(),
    }
}

fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

// ---- installing and editing -------------------------------------------------------------

/// Whether `source` names a git repository: a URL, or a local folder holding `.git`.
fn is_git(source: &str, cwd: &Path) -> bool {
    is_git_url(source) || cwd.join(source).join(".git").exists()
}

/// A repository's URL (`https://…`, `file://…`, `git@host:…`), which a plugin is cloned
/// from; a path to a folder is used where it is, git repository or not.
fn is_git_url(source: &str) -> bool {
    source.contains("://") || source.starts_with("git@")
}

/// How long a `git` command may take (a clone of a large repository over a slow link).
const GIT_LIMIT: std::time::Duration = std::time::Duration::from_secs(300);

/// Runs `git` with `args`; its error output in the error when it fails. Killed after
/// [`GIT_LIMIT`]; never asks for credentials on a terminal.
fn git(args: &[&str], dir: Option<&Path>) -> Result<String, ConfigError> {
    use std::io::Read;
    use std::process::Stdio;
    let mut command = Command::new("git");
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let mut child = command
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| ConfigError::Plugin(format!("cannot run git: {e}")))?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_string(&mut text);
            }
            text
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let started = std::time::Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if started.elapsed() > GIT_LIMIT => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!("took longer than {} s", GIT_LIMIT.as_secs()));
            }
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(20)),
            Err(e) => break Err(e.to_string()),
        }
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    let what = args.first().copied().unwrap_or_default();
    match status {
        Ok(status) if status.success() => Ok(stdout.trim().to_owned()),
        Ok(_) => Err(ConfigError::Plugin(format!(
            "`git {what}` failed: {}",
            crate::redact::redact_urls_in(stderr.trim())
        ))),
        Err(reason) => Err(ConfigError::Plugin(format!("`git {what}` {reason}"))),
    }
}

/// Clones `location` (a URL, or a path from the working directory) into `store`, under the
/// name its manifest gives (`name_of` reads it from the clone). A name already there is the
/// error `taken` words; the clone is removed.
fn clone_named(
    paths: &ConfigPaths,
    location: &str,
    store: &Path,
    name_of: fn(&Path) -> Result<String, ConfigError>,
    taken: impl FnOnce(&str, &Path) -> String,
) -> Result<PathBuf, ConfigError> {
    let local = paths.cwd.join(location);
    let from = if local.exists() {
        local.to_string_lossy().into_owned()
    } else {
        location.to_owned()
    };
    let dir = clone(&from, store)?;
    let repo = dir.path().join("repo");
    let name = name_of(&repo)?;
    let target = store.join(&name);
    if target.exists() {
        return Err(ConfigError::Plugin(taken(&name, &target)));
    }
    std::fs::rename(&repo, &target).map_err(|source| ConfigError::Write {
        path: target.clone(),
        source,
    })?;
    Ok(target)
}

/// Clones `source` into a new folder under `parent`; returns that folder.
fn clone(source: &str, parent: &Path) -> Result<tempfile::TempDir, ConfigError> {
    super::edit::create_private_dir(parent).map_err(|source| ConfigError::Write {
        path: parent.to_owned(),
        source,
    })?;
    let dir = tempfile::Builder::new()
        .prefix(".clone-")
        .tempdir_in(parent)
        .map_err(|source| ConfigError::Write {
            path: parent.to_owned(),
            source,
        })?;
    let target = dir.path().join("repo");
    git(
        &[
            "clone",
            "--quiet",
            "--depth",
            "1",
            "--",
            source,
            &target.to_string_lossy(),
        ],
        None,
    )?;
    Ok(dir)
}

/// A plugin's name: its manifest's `name`, else its folder's name; sanitised.
fn plugin_name(root: &Path) -> Result<String, ConfigError> {
    let manifest = root.join(MANIFEST);
    let from_manifest = std::fs::read_to_string(&manifest)
        .ok()
        .and_then(|text| {
            let doc = Document::new(manifest.clone(), text);
            serde_json::from_str::<Manifest>(&strip_jsonc(&doc)).ok()
        })
        .and_then(|m| m.name);
    let name = from_manifest
        .or_else(|| root.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let clean = ServerName::sanitize(&name);
    if clean.is_empty() {
        return Err(ConfigIssue::error("the plugin has no usable name")
            .in_file(manifest)
            .field("name")
            .into());
    }
    Ok(clean)
}

/// Opens `section` of a scope's file for an edit (locked until dropped).
fn open(
    paths: &ConfigPaths,
    scope: Scope,
    section: &'static str,
) -> Result<ConfigEdit, ConfigError> {
    let (path, location, mode) = paths.scope_file(scope);
    ConfigEdit::open_section(&path, location, section, mode)
}

/// Installs a plugin from a folder, a git repository (URL or local path, cloned under the
/// state directory) or `NAME@MARKETPLACE`, recording it in `scope`'s file.
pub fn add_plugin(
    paths: &ConfigPaths,
    scope: Scope,
    source: &str,
) -> Result<PluginInfo, ConfigError> {
    if let Some((name, market)) = marketplace_ref(source) {
        let folder = marketplace_plugin(paths, name, market)?;
        return install(paths, scope, source, &folder);
    }
    install(paths, scope, source, source)
}

/// `NAME@MARKETPLACE`, when `source` is one (not a path nor a URL).
fn marketplace_ref(source: &str) -> Option<(&str, &str)> {
    if source.contains('/') || source.contains(':') {
        return None;
    }
    source
        .split_once('@')
        .filter(|(n, m)| !n.is_empty() && !m.is_empty())
}

fn install(
    paths: &ConfigPaths,
    scope: Scope,
    recorded: &str,
    location: &str,
) -> Result<PluginInfo, ConfigError> {
    let store = paths.state_dir.join("plugins");
    // A path is used in place (as a folder is), even when it holds a repository: the user
    // edits it there. A URL is cloned.
    let (root, cloned) = if is_git_url(location) {
        let target = clone_named(paths, location, &store, plugin_name, |name, target| {
            format!(
                "plugin `{name}` is already installed ({})\n  hint: remove it first with `switchboard plugin remove {name}`",
                target.display()
            )
        })?;
        (target, true)
    } else {
        let root =
            std::path::absolute(paths.cwd.join(location)).map_err(|source| ConfigError::Read {
                path: PathBuf::from(location),
                source,
            })?;
        if !root.is_dir() {
            return Err(ConfigError::Plugin(format!(
                "{} is not a folder, a git repository nor NAME@MARKETPLACE",
                root.display()
            )));
        }
        (root, false)
    };
    let result = record(paths, scope, recorded, &root);
    if result.is_err() && cloned {
        let _ = std::fs::remove_dir_all(&root);
    }
    result
}

fn record(
    paths: &ConfigPaths,
    scope: Scope,
    source: &str,
    root: &Path,
) -> Result<PluginInfo, ConfigError> {
    let name = plugin_name(root)?;
    let folder = read_folder(&name, root, &plugin_data_dir(&paths.state_dir, &name));
    if let Some(issue) = folder.issues.into_iter().find(ConfigIssue::is_error) {
        return Err(issue.hint("the plugin was not added").into());
    }
    let mut edit = open(paths, scope, "plugins")?;
    if edit.contains(&name) {
        return Err(ConfigError::Plugin(format!(
            "plugin `{name}` is already installed in {scope} scope ({})\n  hint: remove it first with `switchboard plugin remove {name}`",
            edit.path().display()
        )));
    }
    let mut entry = serde_json::json!({
        "source": source,
        "path": root.to_string_lossy(),
        "enabled": true,
    });
    if let Some(version) = &folder.version {
        entry["version"] = serde_json::Value::String(version.clone());
    }
    edit.set(&name, &entry)?;
    edit.save()?;
    Ok(PluginInfo {
        name,
        scope,
        file: edit.path().to_owned(),
        source: source.to_owned(),
        path: root.to_owned(),
        enabled: true,
        version: folder.version,
        description: folder.description,
        servers: Vec::new(),
    })
}

/// The plugin of that name: in the scope named, else the only scope that has it.
fn find(
    plugins: &[PluginInfo],
    name: &str,
    scope: Option<Scope>,
) -> Result<PluginInfo, ConfigError> {
    let found: Vec<&PluginInfo> = plugins
        .iter()
        .filter(|p| p.name == name && scope.is_none_or(|s| s == p.scope))
        .collect();
    match found.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(ConfigError::Plugin(format!("no plugin named `{name}`"))),
        many => Err(ConfigError::Plugin(format!(
            "plugin `{name}` is installed in several scopes ({}); name one with --scope",
            many.iter()
                .map(|p| p.scope.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Removes a plugin's record (and its clone, when Switchboard made one).
pub fn remove_plugin(
    paths: &ConfigPaths,
    plugins: &[PluginInfo],
    name: &str,
    scope: Option<Scope>,
) -> Result<PluginInfo, ConfigError> {
    let plugin = find(plugins, name, scope)?;
    let mut edit = open(paths, plugin.scope, "plugins")?;
    edit.remove(name)?;
    edit.save()?;
    // Only what Switchboard made is deleted: the clone it made (`plugins/<name>`, exactly:
    // a recorded path may come from a repository's file) and the data folder, named only by a
    // valid name (the loader refuses others).
    let valid = ServerName::new(&plugin.name).is_ok();
    if valid && plugin.path == paths.state_dir.join("plugins").join(&plugin.name) {
        let _ = std::fs::remove_dir_all(&plugin.path);
    }
    // Its data, unless the same plugin stays installed in another scope.
    if valid
        && !plugins
            .iter()
            .any(|p| p.name == plugin.name && p.scope != plugin.scope)
    {
        let _ = std::fs::remove_dir_all(plugin_data_dir(&paths.state_dir, &plugin.name));
    }
    Ok(plugin)
}

/// Enables or disables a plugin (its servers come and go with it).
pub fn set_plugin_enabled(
    paths: &ConfigPaths,
    plugins: &[PluginInfo],
    name: &str,
    scope: Option<Scope>,
    enabled: bool,
) -> Result<PluginInfo, ConfigError> {
    let plugin = find(plugins, name, scope)?;
    let mut edit = open(paths, plugin.scope, "plugins")?;
    edit.set_field(name, "enabled", Some(&serde_json::Value::Bool(enabled)))?;
    edit.save()?;
    Ok(PluginInfo { enabled, ..plugin })
}

/// Pulls a cloned plugin's repository; returns the plugin with its new version.
pub fn update_plugin(
    paths: &ConfigPaths,
    plugins: &[PluginInfo],
    name: &str,
    scope: Option<Scope>,
) -> Result<PluginInfo, ConfigError> {
    let plugin = find(plugins, name, scope)?;
    // Only a clone Switchboard made is pulled: a folder used in place is the user's own (a
    // working copy of theirs is never pulled behind their back).
    let clone = plugin.path.starts_with(paths.state_dir.join("plugins"));
    if !clone || !plugin.path.join(".git").exists() {
        return Err(ConfigError::Plugin(format!(
            "plugin `{name}` is a folder used where it is, not a clone; it is read there ({}), so update it there",
            plugin.path.display()
        )));
    }
    git(&["pull", "--quiet", "--ff-only"], Some(&plugin.path))?;
    let folder = read_folder(name, &plugin.path, &plugin_data_dir(&paths.state_dir, name));
    let mut edit = open(paths, plugin.scope, "plugins")?;
    let version = folder.version.clone().map(serde_json::Value::String);
    edit.set_field(name, "version", version.as_ref())?;
    edit.save()?;
    Ok(PluginInfo {
        version: folder.version,
        description: folder.description,
        ..plugin
    })
}

// ---- marketplaces -------------------------------------------------------------------------

#[derive(Debug, Deserialize)]
struct MarketplaceFile {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    plugins: Vec<MarketplaceEntry>,
}

#[derive(Debug, Deserialize)]
struct MarketplaceEntry {
    name: String,
    source: serde_json::Value,
}

fn read_marketplace(root: &Path) -> Result<MarketplaceFile, ConfigError> {
    let path = root.join(MARKETPLACE);
    let doc = Document::read(&path)?.ok_or_else(|| {
        ConfigError::Plugin(format!(
            "{} is not a marketplace: no {MARKETPLACE}",
            root.display()
        ))
    })?;
    serde_json::from_str(&strip_jsonc(&doc)).map_err(|e| {
        ConfigIssue::error(format!("not a marketplace file: {e}"))
            .in_file(path)
            .into()
    })
}

/// Adds a marketplace (a folder or a git repository, cloned) to the user's file; returns its
/// name.
pub fn add_marketplace(paths: &ConfigPaths, source: &str) -> Result<String, ConfigError> {
    let store = paths.state_dir.join("marketplaces");
    let (root, cloned) = if is_git(source, &paths.cwd) {
        let target = clone_named(paths, source, &store, marketplace_name, |name, _| {
            format!("marketplace `{name}` is already added")
        })?;
        (target, true)
    } else {
        (
            std::path::absolute(paths.cwd.join(source)).unwrap_or_else(|_| PathBuf::from(source)),
            false,
        )
    };
    let result = (|| {
        let name = marketplace_name(&root)?;
        let mut edit = open(paths, Scope::User, "marketplaces")?;
        edit.set(
            &name,
            &serde_json::json!({"source": source, "path": root.to_string_lossy()}),
        )?;
        edit.save()?;
        Ok(name)
    })();
    if result.is_err() && cloned {
        let _ = std::fs::remove_dir_all(&root);
    }
    result
}

/// One marketplace recorded in the user's file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarketplaceInfo {
    pub name: String,
    /// What it was added from (a path or a URL, which may hold credentials: redact it).
    pub source: String,
    /// Its folder.
    pub path: PathBuf,
    /// The plugins it lists (empty when its file cannot be read).
    pub plugins: Vec<String>,
}

/// The marketplaces recorded in the user's file, in file order.
pub fn list_marketplaces(paths: &ConfigPaths) -> Result<Vec<MarketplaceInfo>, ConfigError> {
    let user = paths.user_file();
    let Some(doc) = Document::read(&user)? else {
        return Ok(Vec::new());
    };
    let value: serde_json::Value = serde_json::from_str(&strip_jsonc(&doc)).unwrap_or_default();
    let Some(markets) = value.get("marketplaces").and_then(|m| m.as_object()) else {
        return Ok(Vec::new());
    };
    Ok(markets
        .iter()
        .map(|(name, record)| {
            let text = |key: &str| {
                record
                    .get(key)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_owned()
            };
            let path = PathBuf::from(text("path"));
            let plugins = read_marketplace(&path)
                .map(|file| file.plugins.into_iter().map(|p| p.name).collect())
                .unwrap_or_default();
            MarketplaceInfo {
                name: name.clone(),
                source: text("source"),
                path,
                plugins,
            }
        })
        .collect())
}

/// Removes a marketplace from the user's file (and its clone, when Switchboard made one).
/// Plugins installed from it stay installed.
pub fn remove_marketplace(paths: &ConfigPaths, name: &str) -> Result<MarketplaceInfo, ConfigError> {
    let market = list_marketplaces(paths)?
        .into_iter()
        .find(|m| m.name == name)
        .ok_or_else(|| {
            ConfigError::Plugin(format!(
                "no marketplace named `{name}`\n  hint: `switchboard plugin marketplace list` shows them"
            ))
        })?;
    let mut edit = open(paths, Scope::User, "marketplaces")?;
    edit.remove(name)?;
    edit.save()?;
    if market
        .path
        .starts_with(paths.state_dir.join("marketplaces"))
    {
        let _ = std::fs::remove_dir_all(&market.path);
    }
    Ok(market)
}

fn marketplace_name(root: &Path) -> Result<String, ConfigError> {
    let file = read_marketplace(root)?;
    let name = file
        .name
        .or_else(|| root.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    Ok(ServerName::sanitize(&name))
}

/// Where plugin `name` of marketplace `market` is: a folder inside the marketplace, or a URL.
fn marketplace_plugin(
    paths: &ConfigPaths,
    name: &str,
    market: &str,
) -> Result<String, ConfigError> {
    let user = paths.user_file();
    let doc = Document::read(&user)?;
    let root = doc
        .as_ref()
        .map(|d| serde_json::from_str::<serde_json::Value>(&strip_jsonc(d)).unwrap_or_default())
        .and_then(|v| v.get("marketplaces")?.get(market)?.get("path")?.as_str().map(PathBuf::from))
        .ok_or_else(|| {
            ConfigError::Plugin(format!(
                "no marketplace named `{market}`\n  hint: add it with `switchboard plugin marketplace add PATH|URL`"
            ))
        })?;
    let file = read_marketplace(&root)?;
    let entry = file
        .plugins
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| {
            ConfigError::Plugin(format!(
                "marketplace `{market}` has no plugin named `{name}`"
            ))
        })?;
    let source = match &entry.source {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Object(o) => o
            .get("url")
            .or_else(|| o.get("path"))
            .and_then(|v| v.as_str())
            .map(str::to_owned)
            .unwrap_or_default(),
        _ => String::new(),
    };
    if source.is_empty() {
        return Err(
            ConfigIssue::error(format!("plugin `{name}` has no usable source"))
                .in_file(root.join(MARKETPLACE))
                .field(format!("plugins.{name}.source"))
                .into(),
        );
    }
    if source.contains("://") {
        return Ok(source);
    }
    Ok(root.join(source).to_string_lossy().into_owned())
}
