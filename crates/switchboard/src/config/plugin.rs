//! Plugins: folders laid out as Claude Code's plugins are, whose MCP servers join the
//! configuration of the scope they are installed in.
//!
//! A plugin is recorded in a scope's file under `plugins.<name>` (`source`, `path`, `enabled`,
//! `version`, `disabledServers`: its servers disabled one by one, by configuration name); a plugin from a repository URL is cloned under the state directory
//! (`plugins/<name>`), a folder (a repository or not) is used where it is. The project's file
//! is shared, so its records hold no path of the machine that wrote them: a clone's or a
//! marketplace plugin's record holds its `source` only (and `marketplace`, the marketplace's
//! URL), a folder's a `path` from the project root, inside the project. Each machine finds the
//! plugin where it keeps that source ([`locate`]); a copy it lacks is a warning whose hint
//! (`switchboard plugin fetch NAME`, after `plugin marketplace add URL`) makes it, changing
//! no shared file: nothing is fetched because a file says so.
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
    /// Its folder on this machine (where it would be, when it is not here).
    pub path: PathBuf,
    /// Whether its folder is on this machine: a project's plugin whose clone was not made
    /// here yet, or whose marketplace is not added here, is not (`plugin fetch` makes it).
    pub present: bool,
    /// The URL of the marketplace a project's `NAME@MARKETPLACE` record names, for the hint
    /// that adds it (as written in the project's file: redact it).
    pub marketplace_url: Option<String>,
    pub enabled: bool,
    pub version: Option<String>,
    pub description: Option<String>,
    /// The names of the servers it provides (when enabled and readable).
    pub servers: Vec<String>,
    /// Its servers the user disabled one by one (`disabledServers`, configuration names
    /// `plugin_<plugin>_<server>`): listed as disabled, never started.
    pub disabled_servers: Vec<String>,
}

/// A plugin's record in a scope's file. `path` is absolute in the user's own files; a
/// project's file (shared) holds a path relative to the project root, or none: the plugin is
/// then where this machine keeps its source ([`locate`]).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct PluginRecord {
    #[serde(default)]
    pub(crate) source: String,
    #[serde(default)]
    pub(crate) path: Option<PathBuf>,
    #[serde(default = "yes")]
    pub(crate) enabled: bool,
    #[serde(default)]
    pub(crate) version: Option<String>,
    /// A `NAME@MARKETPLACE` plugin's marketplace URL (in a project's record).
    #[serde(default)]
    pub(crate) marketplace: Option<String>,
    /// Its servers disabled one by one, by configuration name (`plugin_<plugin>_<server>`).
    #[serde(default, rename = "disabledServers")]
    pub(crate) disabled_servers: Vec<String>,
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
    leads_out_of(real_root, path, "the plugin's folder")
}

/// [`leads_out`] of any folder (`what` names it).
fn leads_out_of(real_root: &Path, path: &Path, what: &str) -> Option<String> {
    std::fs::symlink_metadata(path).ok()?;
    match path.canonicalize() {
        Ok(real) if real.starts_with(real_root) => None,
        Ok(real) => Some(format!("leads out of {what} (to {})", real.display())),
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

// ---- where a record's plugin is on this machine -----------------------------------------

/// What [`locate`] needs of this machine's places.
#[derive(Debug, Clone)]
pub(crate) struct PluginPlaces {
    pub(crate) state_dir: PathBuf,
    /// A project's (and a local) record's relative path is from here.
    pub(crate) project_root: PathBuf,
    pub(crate) cwd: PathBuf,
    /// The user's file, which records the marketplaces (`None`: none is read).
    pub(crate) user_file: Option<PathBuf>,
}

/// Where a record's plugin is on this machine.
#[derive(Debug)]
pub(crate) struct Located {
    /// Its folder (where it would be, when it is not here).
    pub(crate) path: PathBuf,
    /// Why the folder is not read: it is not on this machine (a warning whose hint makes it
    /// and changes no shared file), or the record may not name it (an error).
    pub(crate) problem: Option<ConfigIssue>,
}

impl Located {
    fn at(path: PathBuf) -> Located {
        Located {
            path,
            problem: None,
        }
    }

    fn missing(path: PathBuf, issue: ConfigIssue) -> Located {
        Located {
            path,
            problem: Some(issue),
        }
    }
}

/// Where this machine keeps a plugin cloned from a URL: `<state dir>/plugins/<name>`.
fn clone_dir(state_dir: &Path, name: &str) -> PathBuf {
    state_dir.join("plugins").join(name)
}

/// Where the plugin recorded as `name` (`field`: its record's field, for issues) is on this
/// machine. An absolute `path` is used as written; a relative one is from the project root
/// (for a project's or a local record; else from the folder of the file holding it), and a
/// project's may not lead out of the project, by `..` or a link. Without a `path`, the
/// plugin is where this machine keeps its source: a URL's clone in
/// `<state dir>/plugins/<name>`, a `NAME@MARKETPLACE`'s folder in that marketplace as the
/// user's file records it. Nothing is fetched: a missing copy is a warning naming the command
/// that makes it.
pub(crate) fn locate(
    places: &PluginPlaces,
    scope: Scope,
    file: &Path,
    name: &str,
    field: &str,
    record: &PluginRecord,
) -> Located {
    match &record.path {
        // Another machine's path, as an older Switchboard wrote into a project's file: when
        // it is not here and the source says where this machine keeps the plugin, it is
        // there.
        Some(path)
            if scope == Scope::Project && path.is_absolute() && !path.is_dir() && {
                is_git_url(&record.source) || marketplace_ref(&record.source).is_some()
            } =>
        {
            by_source(places, name, field, record)
        }
        Some(path) if path.is_absolute() => Located::at(path.clone()),
        Some(path) => relative(places, scope, file, name, field, path),
        None => by_source(places, name, field, record),
    }
}

/// A record's relative `path`.
fn relative(
    places: &PluginPlaces,
    scope: Scope,
    file: &Path,
    name: &str,
    field: &str,
    path: &Path,
) -> Located {
    let base = match scope {
        Scope::Project | Scope::Local => places.project_root.as_path(),
        _ => file
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(&places.cwd),
    };
    let folder = base.join(path);
    if scope != Scope::Project {
        return Located::at(folder);
    }
    // A project's file comes with a repository: what it names must be in that repository.
    let refused = |why: String| {
        ConfigIssue::error(format!(
            "plugin `{name}`: its path `{}` {why}",
            path.display()
        ))
        .field(format!("{field}.path"))
        .hint("a project's plugin must be inside the project (links out of it are refused); nothing was read")
    };
    let mut depth = 0usize;
    for part in path.components() {
        match part {
            std::path::Component::Normal(_) => depth += 1,
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir if depth > 0 => depth -= 1,
            _ => {
                let why = format!("leads out of the project ({})", base.display());
                return Located::missing(folder, refused(why));
            }
        }
    }
    if std::fs::symlink_metadata(&folder).is_err() {
        let issue = ConfigIssue::error(format!(
            "plugin `{name}`: its folder `{}` is not in the project ({})",
            path.display(),
            base.display()
        ))
        .field(format!("{field}.path"))
        .hint("the path is from the project root: restore the folder there, or correct the record");
        return Located::missing(folder, issue);
    }
    let real_base = base.canonicalize().unwrap_or_else(|_| base.to_owned());
    match leads_out_of(&real_base, &folder, "the project") {
        Some(why) => Located::missing(folder, refused(why)),
        None => Located::at(folder),
    }
}

/// A record without a `path`: where this machine keeps its source.
fn by_source(places: &PluginPlaces, name: &str, field: &str, record: &PluginRecord) -> Located {
    let source = record.source.as_str();
    if let Some((plugin, market)) = marketplace_ref(source) {
        return in_marketplace(places, name, plugin, market, record.marketplace.as_deref());
    }
    if is_git_url(source) {
        return cloned_from(places, name, source);
    }
    Located::missing(
        PathBuf::new(),
        ConfigIssue::error(format!(
            "plugin `{name}`: the record has no `path`, and its source `{}` is neither a \
             repository URL nor NAME@MARKETPLACE",
            crate::redact::redact_urls_in(source)
        ))
        .field(format!("{field}.path"))
        .hint("record the folder's path, or a source Switchboard can fetch"),
    )
}

/// A plugin cloned from `url` into this machine's state folder.
fn cloned_from(places: &PluginPlaces, name: &str, url: &str) -> Located {
    let folder = clone_dir(&places.state_dir, name);
    if folder.is_dir() {
        return Located::at(folder);
    }
    let issue = ConfigIssue::warning(format!(
        "plugin `{name}` is not on this machine yet (no clone at {}): its servers are left out",
        folder.display()
    ))
    .hint(format!(
        "run `switchboard plugin fetch {name}` to clone {} there (no shared file changes)",
        crate::redact::redact_url(url)
    ));
    Located::missing(folder, issue)
}

/// Plugin `plugin` of marketplace `market`, recorded as `name` (`url`: the marketplace's URL,
/// when the record gives it).
fn in_marketplace(
    places: &PluginPlaces,
    name: &str,
    plugin: &str,
    market: &str,
    url: Option<&str>,
) -> Located {
    let add = format!(
        "`switchboard plugin marketplace add {}`",
        url.map_or_else(|| "URL".to_owned(), crate::redact::redact_url)
    );
    let root = places
        .user_file
        .as_deref()
        .map(|file| marketplace_root(file, market));
    let root = match root {
        Some(Ok(Some(root))) => root,
        Some(Err(e)) => {
            let issue = ConfigIssue::warning(format!(
                "plugin `{name}`: the marketplaces cannot be read: {e}: its servers are left out"
            ));
            return Located::missing(PathBuf::new(), issue);
        }
        None | Some(Ok(None)) => {
            let issue = ConfigIssue::warning(format!(
                "plugin `{name}` comes from marketplace `{market}`, which is not added on this \
                 machine: its servers are left out"
            ))
            .hint(format!(
                "add it with {add}, then run `switchboard plugin fetch {name}` (no shared file changes)"
            ));
            return Located::missing(PathBuf::new(), issue);
        }
    };
    match marketplace_entry(&root, market, plugin) {
        Ok(location) if location.contains("://") => cloned_from(places, name, &location),
        Ok(location) => {
            let folder = PathBuf::from(location);
            if folder.is_dir() {
                return Located::at(folder);
            }
            let issue = ConfigIssue::warning(format!(
                "plugin `{name}`: marketplace `{market}` has no folder {} for it: its servers \
                 are left out",
                folder.display()
            ))
            .hint(stale_market_hint(market, &add));
            Located::missing(folder, issue)
        }
        Err(e) => {
            let issue =
                ConfigIssue::warning(format!("plugin `{name}`: {e}: its servers are left out"))
                    .hint(stale_market_hint(market, &add));
            Located::missing(root, issue)
        }
    }
}

/// What to do when this machine's copy of a marketplace lacks a plugin a record names.
fn stale_market_hint(market: &str, add: &str) -> String {
    format!(
        "this machine's copy of marketplace `{market}` may be older than the record: \
         `switchboard plugin marketplace remove {market}`, then {add} (no shared file changes)"
    )
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

/// Installs a plugin from a folder (used where it is), a repository URL (cloned under the
/// state directory) or `NAME@MARKETPLACE`, recording it in `scope`'s file. The project's file
/// is shared: it records no path of this machine's (the source only, or a path from the
/// project root), so a folder outside the project, or a URL holding credentials, is refused.
pub fn add_plugin(
    paths: &ConfigPaths,
    scope: Scope,
    source: &str,
) -> Result<PluginInfo, ConfigError> {
    if scope == Scope::Project && is_git_url(source) && has_credentials(source) {
        return Err(ConfigError::Plugin(format!(
            "{} holds credentials, which the project's shared .mcp.json would give to everyone \
             who has the project\n  hint: add the URL without them (git asks its credential \
             helper), or install the plugin for you only with `--scope local`",
            crate::redact::redact_url(source)
        )));
    }
    if let Some((name, market)) = marketplace_ref(source) {
        let folder = marketplace_plugin(paths, name, market)?;
        return install(paths, scope, source, &folder);
    }
    install(paths, scope, source, source)
}

/// Whether a URL carries credentials: a password, or for `http(s)` any user (a token is
/// often given as one). `ssh://git@host/…` and `git@host:…` name a user, not a secret.
fn has_credentials(url: &str) -> bool {
    let Some((scheme, rest)) = url.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    authority.rsplit_once('@').is_some_and(|(user, _)| {
        user.contains(':')
            || scheme.eq_ignore_ascii_case("http")
            || scheme.eq_ignore_ascii_case("https")
    })
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
    // Where the plugin is follows from its source alone (each machine has its own copy)
    // when it is a clone or in a marketplace.
    let portable = cloned || marketplace_ref(recorded).is_some();
    let result = record(paths, scope, recorded, &root, portable);
    if result.is_err() && cloned {
        let _ = std::fs::remove_dir_all(&root);
    }
    result
}

/// The record of a plugin added to the project's file, which is shared: no path of this
/// machine's. A `portable` plugin records its source only (with its marketplace's URL, for
/// the hint that adds it elsewhere); a folder its path from the project root, and only when it
/// is inside the project.
fn project_record(
    paths: &ConfigPaths,
    source: &str,
    root: &Path,
    portable: bool,
) -> Result<serde_json::Value, ConfigError> {
    if portable {
        let mut entry = serde_json::json!({"source": source, "enabled": true});
        let url = marketplace_ref(source)
            .and_then(|(_, market)| marketplace_record(&paths.user_file(), market).ok()?)
            .and_then(|r| r.get("source")?.as_str().map(str::to_owned))
            .filter(|url| is_git_url(url) && !has_credentials(url));
        if let Some(url) = url {
            entry["marketplace"] = serde_json::Value::String(url);
        }
        return Ok(entry);
    }
    let project = &paths.project_root;
    let real_project = project.canonicalize().unwrap_or_else(|_| project.clone());
    let real = root.canonicalize().unwrap_or_else(|_| root.to_owned());
    let Ok(inside) = real.strip_prefix(&real_project) else {
        return Err(ConfigError::Plugin(format!(
            "{} is outside the project ({}): the project's .mcp.json is shared, and that \
             folder is on this machine only\n  hint: install it for you only with `--scope \
             local`, or add it by its repository URL so each machine clones its own copy",
            root.display(),
            project.display()
        )));
    };
    let inside = if inside.as_os_str().is_empty() {
        ".".to_owned()
    } else {
        inside.to_string_lossy().into_owned()
    };
    Ok(serde_json::json!({"source": inside, "path": inside, "enabled": true}))
}

fn record(
    paths: &ConfigPaths,
    scope: Scope,
    source: &str,
    root: &Path,
    portable: bool,
) -> Result<PluginInfo, ConfigError> {
    let name = plugin_name(root)?;
    let folder = read_folder(&name, root, &plugin_data_dir(&paths.state_dir, &name));
    if let Some(issue) = folder.issues.into_iter().find(ConfigIssue::is_error) {
        return Err(issue.hint("the plugin was not added").into());
    }
    let mut entry = if scope == Scope::Project {
        project_record(paths, source, root, portable)?
    } else {
        serde_json::json!({
            "source": source,
            "path": root.to_string_lossy(),
            "enabled": true,
        })
    };
    let mut edit = open(paths, scope, "plugins")?;
    if edit.contains(&name) {
        return Err(ConfigError::Plugin(format!(
            "plugin `{name}` is already installed in {scope} scope ({})\n  hint: remove it first with `switchboard plugin remove {name}`",
            edit.path().display()
        )));
    }
    if let Some(version) = &folder.version {
        entry["version"] = serde_json::Value::String(version.clone());
    }
    edit.set(&name, &entry)?;
    edit.save()?;
    Ok(PluginInfo {
        name,
        scope,
        file: edit.path().to_owned(),
        source: entry["source"].as_str().unwrap_or(source).to_owned(),
        path: root.to_owned(),
        present: true,
        marketplace_url: entry
            .get("marketplace")
            .and_then(|u| u.as_str())
            .map(str::to_owned),
        enabled: true,
        version: folder.version,
        description: folder.description,
        servers: Vec::new(),
        disabled_servers: Vec::new(),
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
    // This machine's clone only, and only when no other scope's record reads it (a project's
    // plugin and the user's own of the same source share it).
    let valid = ServerName::new(&plugin.name).is_ok();
    let shared = plugins
        .iter()
        .any(|p| p.scope != plugin.scope && p.path == plugin.path);
    if valid && !shared && plugin.path == clone_dir(&paths.state_dir, &plugin.name) {
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

/// Enables or disables one server of a plugin (`server`: its name in the plugin's file, or
/// its configuration name `plugin_<plugin>_<server>`), recorded in the plugin's
/// `disabledServers`. Returns the plugin as it is now and the server's configuration name.
pub fn set_plugin_server_enabled(
    paths: &ConfigPaths,
    plugins: &[PluginInfo],
    plugin: &str,
    server: &str,
    scope: Option<Scope>,
    enabled: bool,
) -> Result<(PluginInfo, String), ConfigError> {
    let mut info = find(plugins, plugin, scope)?;
    let qualified = [server.to_owned(), plugin_server_name(plugin, server)]
        .into_iter()
        .find(|name| info.servers.contains(name) || info.disabled_servers.contains(name))
        .ok_or_else(|| {
            let offered = if info.servers.is_empty() {
                "none (is the plugin enabled and its folder here?)".to_owned()
            } else {
                info.servers.join(", ")
            };
            ConfigError::Plugin(format!(
                "plugin `{plugin}` has no server `{server}`; its servers: {offered}"
            ))
        })?;
    info.disabled_servers.retain(|name| *name != qualified);
    if !enabled {
        info.disabled_servers.push(qualified.clone());
    }
    let mut edit = open(paths, info.scope, "plugins")?;
    let list = serde_json::Value::from(info.disabled_servers.clone());
    edit.set_field(
        plugin,
        "disabledServers",
        (!info.disabled_servers.is_empty()).then_some(&list),
    )?;
    edit.save()?;
    Ok((info, qualified))
}

/// Pulls a cloned plugin's repository; returns the plugin with its new version.
pub fn update_plugin(
    paths: &ConfigPaths,
    plugins: &[PluginInfo],
    name: &str,
    scope: Option<Scope>,
) -> Result<PluginInfo, ConfigError> {
    let plugin = find(plugins, name, scope)?;
    if !plugin.present {
        let hint = if plugin.path == clone_dir(&paths.state_dir, &plugin.name) {
            format!("`switchboard plugin fetch {name}` makes its copy")
        } else {
            format!(
                "it is read from {}, which is not there",
                plugin.path.display()
            )
        };
        return Err(ConfigError::Plugin(format!(
            "plugin `{name}` is not on this machine\n  hint: {hint}"
        )));
    }
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

/// Makes this machine's copy of a plugin whose record names only its source (as a project's
/// does, added on another machine): a repository URL, or a `NAME@MARKETPLACE` whose
/// marketplace lists a URL, is cloned into `<state dir>/plugins/<name>`; a marketplace's folder
/// needs only the marketplace. Edits no file. Returns the plugin, and whether a clone was made
/// (`false`: it was here already).
pub fn fetch_plugin(
    paths: &ConfigPaths,
    plugins: &[PluginInfo],
    name: &str,
    scope: Option<Scope>,
) -> Result<(PluginInfo, bool), ConfigError> {
    let plugin = find(plugins, name, scope)?;
    if plugin.present {
        return Ok((plugin, false));
    }
    let location = match marketplace_ref(&plugin.source) {
        Some((entry, market)) => {
            let Some(root) = marketplace_root(&paths.user_file(), market)? else {
                let url = plugin
                    .marketplace_url
                    .as_deref()
                    .map_or_else(|| "URL".to_owned(), crate::redact::redact_url);
                return Err(ConfigError::Plugin(format!(
                    "plugin `{name}` comes from marketplace `{market}`, which is not added on this machine\n  hint: add it first with `switchboard plugin marketplace add {url}`"
                )));
            };
            marketplace_entry(&root, market, entry)?
        }
        None => plugin.source.clone(),
    };
    let target = clone_dir(&paths.state_dir, &plugin.name);
    if !location.contains("://") || plugin.path != target || ServerName::new(name).is_err() {
        return Err(ConfigError::Plugin(format!(
            "plugin `{name}` is read from a folder ({}), not a clone: there is nothing to fetch",
            plugin.path.display()
        )));
    }
    if std::fs::symlink_metadata(&target).is_ok() {
        return Err(ConfigError::Plugin(format!(
            "{} is in the way of the clone\n  hint: move it away, then fetch again",
            target.display()
        )));
    }
    let dir = clone(&location, &paths.state_dir.join("plugins"))?;
    std::fs::rename(dir.path().join("repo"), &target).map_err(|source| ConfigError::Write {
        path: target.clone(),
        source,
    })?;
    Ok((
        PluginInfo {
            present: true,
            ..plugin
        },
        true,
    ))
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

/// Marketplace `market`'s record in the user's file (`user`), if it has one.
fn marketplace_record(user: &Path, market: &str) -> Result<Option<serde_json::Value>, ConfigError> {
    let doc = Document::read(user)?;
    Ok(doc
        .as_ref()
        .map(|d| serde_json::from_str::<serde_json::Value>(&strip_jsonc(d)).unwrap_or_default())
        .and_then(|mut v| {
            v.get_mut("marketplaces")?
                .get_mut(market)
                .map(serde_json::Value::take)
        }))
}

/// Marketplace `market`'s folder, as the user's file (`user`) records it.
fn marketplace_root(user: &Path, market: &str) -> Result<Option<PathBuf>, ConfigError> {
    Ok(marketplace_record(user, market)?.and_then(|r| r.get("path")?.as_str().map(PathBuf::from)))
}

/// Where plugin `name` of marketplace `market` is: a folder inside the marketplace, or a URL.
fn marketplace_plugin(
    paths: &ConfigPaths,
    name: &str,
    market: &str,
) -> Result<String, ConfigError> {
    let root = marketplace_root(&paths.user_file(), market)?.ok_or_else(|| {
        ConfigError::Plugin(format!(
            "no marketplace named `{market}`\n  hint: add it with `switchboard plugin marketplace add PATH|URL`"
        ))
    })?;
    marketplace_entry(&root, market, name)
}

/// Where plugin `name` of the marketplace in `root` (`market`) is: a folder inside it, or a
/// URL. Reads only the marketplace's file.
fn marketplace_entry(root: &Path, market: &str, name: &str) -> Result<String, ConfigError> {
    let file = read_marketplace(root)?;
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
