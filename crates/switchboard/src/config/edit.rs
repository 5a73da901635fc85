//! Editing configuration files: one entry changes, every other byte stays as it was.
//!
//! The file is parsed into a concrete syntax tree (comments and whitespace kept), the entry is
//! added or removed in it, and the result is written atomically (a temporary file in the same
//! folder, then a rename) with the original file's permissions. A file that does not parse is
//! never rewritten. From `open` until the edit is dropped the file is locked (`lock.rs`), so
//! another process's edit waits instead of being lost.

use std::io::Write;
use std::path::{Path, PathBuf};

use jsonc_parser::cst::{CstInputValue, CstObject, CstObjectProp, CstRootNode};

use super::json::{Document, parse_options};
use super::lock::FileLock;
use super::{ConfigError, ConfigIssue};

/// Where the `mcpServers` object sits in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServersLocation {
    /// `{"mcpServers": {...}}`: user, project, managed and dynamic files.
    TopLevel,
    /// `{"projects": {"<root>": {"mcpServers": {...}}}}`: the local-scope file.
    Project(String),
}

/// An open configuration file, ready for edits. The file stays locked against other
/// Switchboard processes' edits until this is dropped.
#[derive(Debug)]
pub struct ConfigEdit {
    path: PathBuf,
    _lock: FileLock,
    original: Option<String>,
    root: CstRootNode,
    location: ServersLocation,
    /// The object edited: `mcpServers`, or `plugins` / `marketplaces`.
    section: &'static str,
    new_file_mode: u32,
}

impl ConfigEdit {
    /// Locks and reads `path` for editing (a missing file starts empty). `new_file_mode` is the
    /// mode a file created by the edit gets; an existing file keeps its own. Waits for another
    /// process's edit of the file to finish (30 s at most).
    pub fn open(
        path: &Path,
        location: ServersLocation,
        new_file_mode: u32,
    ) -> Result<ConfigEdit, ConfigError> {
        ConfigEdit::open_section(path, location, "mcpServers", new_file_mode)
    }

    /// [`ConfigEdit::open`] for another object of entries keyed by name beside `mcpServers`
    /// (`plugins`, `marketplaces`): the same methods edit its entries.
    pub fn open_section(
        path: &Path,
        location: ServersLocation,
        section: &'static str,
        new_file_mode: u32,
    ) -> Result<ConfigEdit, ConfigError> {
        // Edit the file a symlink points to, so the link survives.
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
        let lock = FileLock::acquire(&path)?;
        let original = match std::fs::read_to_string(&path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        let text = original.clone().unwrap_or_default();
        // The AST parse gives the error position; the CST is built only from text that parses.
        let doc = Document::new(path.clone(), text);
        let issue_suffix =
            |issue: ConfigIssue| issue.hint("the file was not changed; fix it by hand first");
        doc.root_object().map_err(issue_suffix)?;
        let root = CstRootNode::parse(&doc.text, &parse_options()).map_err(|e| {
            issue_suffix(
                ConfigIssue::error(format!("invalid JSON: {}", e.kind()))
                    .in_file(&path)
                    .at(doc.position(e.range().start)),
            )
        })?;
        let edit = ConfigEdit {
            path,
            _lock: lock,
            original,
            root,
            location,
            section,
            new_file_mode,
        };
        edit.servers(false)?;
        Ok(edit)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The `mcpServers` object, created (with its parents) when `create` is set.
    fn servers(&self, create: bool) -> Result<Option<CstObject>, ConfigError> {
        let not_object = |field: &str| -> ConfigError {
            ConfigIssue::error(format!(
                "`{field}` is not an object; the file was not changed"
            ))
            .in_file(&self.path)
            .into()
        };
        let lookup = |obj: &CstObject, key: &str| -> Result<Option<CstObject>, ConfigError> {
            match obj.get(key) {
                None if create => obj
                    .object_value_or_create(key)
                    .map(Some)
                    .ok_or_else(|| not_object(key)),
                None => Ok(None),
                Some(prop) => prop.object_value().map(Some).ok_or_else(|| not_object(key)),
            }
        };
        let root = if create {
            self.root.object_value_or_create()
        } else {
            self.root.object_value()
        };
        let Some(mut obj) = root else {
            return if self.root.value().is_some() {
                Err(not_object("the top level"))
            } else {
                Ok(None)
            };
        };
        if let ServersLocation::Project(key) = &self.location {
            for key in ["projects", key.as_str()] {
                match lookup(&obj, key)? {
                    Some(inner) => obj = inner,
                    None => return Ok(None),
                }
            }
        }
        lookup(&obj, self.section)
    }

    /// Names of the entries in this file, in file order.
    pub fn names(&self) -> Vec<String> {
        let Ok(Some(servers)) = self.servers(false) else {
            return Vec::new();
        };
        servers
            .properties()
            .iter()
            .filter_map(|p| p.name().and_then(|n| n.decoded_value().ok()))
            .collect()
    }

    pub fn contains(&self, name: &str) -> bool {
        matches!(self.servers(false), Ok(Some(servers)) if servers.get(name).is_some())
    }

    /// The entry `name` that counts: the last of that name, as the loader reads it (a name
    /// written twice is warned about).
    fn entry(servers: &CstObject, name: &str) -> Option<CstObjectProp> {
        servers
            .properties()
            .into_iter()
            .rev()
            .find(|p| Self::is_named(p, name))
    }

    fn is_named(prop: &CstObjectProp, name: &str) -> bool {
        prop.name().and_then(|n| n.decoded_value().ok()).as_deref() == Some(name)
    }

    /// Adds an entry, or replaces the entry of that name.
    pub fn set(&mut self, name: &str, entry: &serde_json::Value) -> Result<(), ConfigError> {
        let servers = self.servers(true)?.ok_or_else(|| {
            ConfigIssue::error(format!("cannot create `{}`", self.section)).in_file(&self.path)
        })?;
        let value = to_input(entry);
        match Self::entry(&servers, name) {
            Some(prop) => prop.set_value(value),
            None => {
                servers.append(name, value);
            }
        }
        Ok(())
    }

    /// Sets (`Some`) or removes (`None`) one key of an entry, leaving the rest of the entry
    /// as written; `false` when there is no such entry.
    pub fn set_field(
        &mut self,
        name: &str,
        key: &str,
        value: Option<&serde_json::Value>,
    ) -> Result<bool, ConfigError> {
        let Some(prop) = self.servers(false)?.and_then(|s| Self::entry(&s, name)) else {
            return Ok(false);
        };
        let Some(entry) = prop.object_value() else {
            return Err(ConfigIssue::error(format!(
                "server `{name}` is not an object; the file was not changed"
            ))
            .in_file(&self.path)
            .into());
        };
        match (entry.get(key), value) {
            (Some(field), Some(value)) => field.set_value(to_input(value)),
            (None, Some(value)) => {
                entry.append(key, to_input(value));
            }
            (Some(field), None) => field.remove(),
            (None, None) => {}
        }
        Ok(true)
    }

    /// Removes an entry, every copy of it when its name is written more than once; `false`
    /// when there was none.
    pub fn remove(&mut self, name: &str) -> Result<bool, ConfigError> {
        let Some(servers) = self.servers(false)? else {
            return Ok(false);
        };
        let copies: Vec<CstObjectProp> = servers
            .properties()
            .into_iter()
            .filter(|p| Self::is_named(p, name))
            .collect();
        let removed = !copies.is_empty();
        for prop in copies {
            prop.remove();
        }
        Ok(removed)
    }

    /// The file's text with the edits applied.
    pub fn text(&self) -> String {
        let mut text = self.root.to_string();
        if self.original.is_none() && !text.ends_with('\n') {
            text.push('\n');
        }
        text
    }

    /// Writes the edited file atomically. Refuses when the file changed since it was opened
    /// (only a writer that ignores the lock, such as a text editor, can do that).
    pub fn save(&self) -> Result<(), ConfigError> {
        let now = match std::fs::read_to_string(&self.path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => {
                return Err(ConfigError::Read {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        if now != self.original {
            return Err(ConfigIssue::error(
                "the file changed while it was being edited; nothing was written",
            )
            .in_file(&self.path)
            .hint("run the command again")
            .into());
        }
        write_atomic(&self.path, self.text().as_bytes(), self.new_file_mode).map_err(|source| {
            ConfigError::Write {
                path: self.path.clone(),
                source,
            }
        })
    }
}

fn to_input(value: &serde_json::Value) -> CstInputValue {
    match value {
        serde_json::Value::Null => CstInputValue::Null,
        serde_json::Value::Bool(b) => CstInputValue::Bool(*b),
        serde_json::Value::Number(n) => CstInputValue::Number(n.to_string()),
        serde_json::Value::String(s) => CstInputValue::String(s.clone()),
        serde_json::Value::Array(items) => {
            CstInputValue::Array(items.iter().map(to_input).collect())
        }
        serde_json::Value::Object(map) => {
            CstInputValue::Object(map.iter().map(|(k, v)| (k.clone(), to_input(v))).collect())
        }
    }
}

/// Writes a file atomically: a temporary file in the same folder, synced, then renamed over
/// the target. The target's permissions are kept; a new file gets `new_mode` (on Unix).
pub(crate) fn write_atomic(path: &Path, contents: &[u8], new_mode: u32) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".switchboard-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(contents)?;
    tmp.as_file().sync_all()?;
    let permissions = match std::fs::metadata(path) {
        Ok(meta) => Some(meta.permissions()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => new_permissions(new_mode),
        Err(e) => return Err(e),
    };
    if let Some(permissions) = permissions {
        std::fs::set_permissions(tmp.path(), permissions)?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Creates a folder and its missing parents, owner-only on Unix (they may hold tokens).
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

#[cfg(unix)]
fn new_permissions(mode: u32) -> Option<std::fs::Permissions> {
    use std::os::unix::fs::PermissionsExt;
    Some(std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn new_permissions(_mode: u32) -> Option<std::fs::Permissions> {
    // Elsewhere a new file keeps the temporary file's (the folder's default) permissions.
    None
}
