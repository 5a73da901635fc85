//! Tool pins: no tool changes under the user's feet.
//!
//! During the first session with a server (trust on first use), each tool it lists is pinned: the
//! SHA-256 of a canonical JSON (JCS, RFC 8785) of its name, title, description, input and
//! output schemas, annotations and `_meta.ui`, kept with that JSON. The pins of a server are
//! its set of tool names too: a tool never listed before is seen as new. From then on a tool
//! whose definition differs from its pin, or a new one, is *held*: the catalogue leaves it out
//! (a held tool is an unknown tool to the model) until `switchboard mcp approve NAME --changes`
//! ([`Host::approve_changes`](crate::Host::approve_changes)) pins what the server lists now.
//!
//! Pins live in `<state dir>/pins/<server>.<launch hash>.json` (owner-only, written atomically
//! under `<file>.lock`), keyed by the server's name and its entry's launch hash, as its kept
//! lists are: an entry that launches something else is another server, pinned on its first
//! session. They outlive the entry: a server removed and added again is checked against what
//! was pinned before, not trusted afresh (only `mcp approve NAME --changes` starts afresh).
//!
//! An entry's `"pinning": false` (or the user file's top-level `"pinning": false`) turns
//! pinning off for a server; a managed file's `"pinning": true` keeps it on whatever the
//! entries say. The program's own in-process servers are not pinned.
//!
//! With `"scanOnPin": true` (an entry's, or the user file's top level for every entry that does
//! not say), a tool in which the scan (`crate::scan`) finds something of high severity is held
//! instead of pinned when first seen, its findings the reason; approving it pins it as any
//! other held tool.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::config::{ServerConfig, Transport};
use crate::connection::{ServerInfo, ToolDef};
use crate::scan::Finding;

/// One pinned definition: its digest and the canonical JSON it was taken over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Pin {
    /// Hex SHA-256 of the JCS text of `definition`.
    pub(crate) sha256: String,
    /// What was pinned (name, title, description, schemas, annotations, `_meta.ui`).
    pub(crate) definition: Value,
}

impl Pin {
    fn of(definition: Value) -> Pin {
        let text = serde_jcs::to_string(&definition).unwrap_or_else(|_| definition.to_string());
        Pin {
            sha256: hex::encode(Sha256::digest(text.as_bytes())),
            definition,
        }
    }

    /// A tool's pin.
    pub(crate) fn tool(def: &ToolDef) -> Pin {
        let mut map = Map::new();
        map.insert("name".into(), Value::from(def.name.as_str()));
        if let Some(title) = &def.title {
            map.insert("title".into(), Value::from(title.as_str()));
        }
        if let Some(description) = &def.description {
            map.insert("description".into(), Value::from(description.as_str()));
        }
        map.insert("inputSchema".into(), def.input_schema.clone());
        if let Some(output) = &def.output_schema {
            map.insert("outputSchema".into(), output.clone());
        }
        if def.annotations != crate::connection::Annotations::default() {
            map.insert(
                "annotations".into(),
                serde_json::to_value(&def.annotations).unwrap_or(Value::Null),
            );
        }
        if let Some(ui) = def.meta.as_ref().and_then(|m| m.get("ui")) {
            map.insert("_meta.ui".into(), ui.clone());
        }
        Pin::of(Value::Object(map))
    }
}

/// A server's pins, as kept in its file.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PinFile {
    /// The entry's launch hash when the pins were first made.
    #[serde(default)]
    pub(crate) hash: String,
    /// Every pinned tool by its name on the server: the set of names is pinned too.
    #[serde(default)]
    pub(crate) tools: BTreeMap<String, Pin>,
}

/// Why a tool is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ChangeKind {
    /// Its definition differs from its pin.
    Changed,
    /// The server never listed it before (a new tool, or a renamed one).
    New,
    /// Pinned, and no longer listed (not held: there is nothing to call).
    Removed,
}

/// A parameter whose type changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Retyped {
    /// The parameter.
    pub name: String,
    /// Its pinned type (JSON of its `type`, or `any`).
    pub old: String,
    /// Its type now.
    pub new: String,
}

/// How one tool of a server differs from its pin ([`Host::pin_changes`](crate::Host::pin_changes)).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PinChange {
    /// The server.
    pub server: String,
    /// The tool's name on its server.
    pub tool: String,
    /// What happened to it.
    pub kind: ChangeKind,
    /// The pinned description (`None`: none, or a new tool).
    pub old_description: Option<String>,
    /// The description now (`None`: none, or a removed tool).
    pub new_description: Option<String>,
    /// Parameters (input schema `properties`) the pin did not have.
    pub added: Vec<String>,
    /// Pinned parameters no longer there.
    pub removed: Vec<String>,
    /// Parameters whose type changed.
    pub retyped: Vec<Retyped>,
    /// Other parts that changed: `title`, `required`, `inputSchema` (any other change of
    /// it), `outputSchema`, `annotations`, `_meta.ui`.
    pub other: Vec<String>,
    /// What the scan found of high severity in the tool as listed now, when it is held for
    /// that (`"scanOnPin": true`); empty otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
}

impl PinChange {
    /// How `now` (`None`: removed) differs from `pinned` (`None`: new).
    pub(crate) fn between(
        server: &str,
        tool: &str,
        pinned: Option<&Value>,
        now: Option<&Value>,
    ) -> PinChange {
        let kind = match (pinned, now) {
            (None, _) => ChangeKind::New,
            (Some(_), None) => ChangeKind::Removed,
            (Some(_), Some(_)) => ChangeKind::Changed,
        };
        let description =
            |d: Option<&Value>| d.and_then(|d| d.get("description")?.as_str().map(str::to_owned));
        let params = |d: Option<&Value>| -> BTreeMap<String, String> {
            d.and_then(|d| d.get("inputSchema")?.get("properties")?.as_object())
                .map(|props| props.iter().map(|(k, v)| (k.clone(), type_of(v))).collect())
                .unwrap_or_default()
        };
        let (before, after) = (params(pinned), params(now));
        let mut change = PinChange {
            server: server.to_owned(),
            tool: tool.to_owned(),
            kind,
            old_description: description(pinned),
            new_description: description(now),
            added: after
                .keys()
                .filter(|k| !before.contains_key(*k))
                .cloned()
                .collect(),
            removed: before
                .keys()
                .filter(|k| !after.contains_key(*k))
                .cloned()
                .collect(),
            retyped: after
                .iter()
                .filter_map(|(k, new)| {
                    let old = before.get(k)?;
                    (old != new).then(|| Retyped {
                        name: k.clone(),
                        old: old.clone(),
                        new: new.clone(),
                    })
                })
                .collect(),
            other: Vec::new(),
            findings: Vec::new(),
        };
        if let (Some(pinned), Some(now)) = (pinned, now) {
            let part = |d: &Value, key: &str| d.get(key).cloned();
            for key in ["title", "outputSchema", "annotations", "_meta.ui"] {
                if part(pinned, key) != part(now, key) {
                    change.other.push(key.to_owned());
                }
            }
            let schema_rest = |d: &Value, key: &str| {
                let mut schema = d.get("inputSchema").cloned().unwrap_or(Value::Null);
                let required = schema.get("required").cloned();
                if let Some(map) = schema.as_object_mut() {
                    map.remove("required");
                    if let Some(props) = map.get_mut("properties").and_then(Value::as_object_mut) {
                        // Each parameter without its type: the rest of what it says.
                        for value in props.values_mut() {
                            if let Some(p) = value.as_object_mut() {
                                p.remove("type");
                            }
                        }
                    }
                }
                if key == "required" {
                    required
                } else {
                    Some(schema)
                }
            };
            if schema_rest(pinned, "required") != schema_rest(now, "required") {
                change.other.push("required".to_owned());
            }
            let same_names = change.added.is_empty() && change.removed.is_empty();
            if same_names && schema_rest(pinned, "rest") != schema_rest(now, "rest") {
                change.other.push("inputSchema".to_owned());
            }
        }
        change
    }
}

/// A parameter's type as shown in a diff.
fn type_of(schema: &Value) -> String {
    match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(other) => other.to_string(),
        None => "any".to_owned(),
    }
}

/// A held tool: what it is listed as now, and what the scan found in it if that is why.
#[derive(Debug, Clone)]
pub(crate) struct HeldPin {
    /// The pin its definition now would have.
    pub(crate) pin: Pin,
    /// The scan's findings of high severity (`"scanOnPin": true`), else none.
    pub(crate) findings: Vec<Finding>,
}

/// What [`Pins::check`] found: the tools held, by name.
pub(crate) type HeldPins = HashMap<String, HeldPin>;

/// Why pins could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PinError {
    /// Pinning is off for the server (`"pinning": false`).
    #[error("server `{0}`: pinning is off (`\"pinning\": false`)")]
    Off(String),
    /// No state folder: nothing is kept.
    #[error("server `{0}`: no state folder to keep pins in")]
    NoStateDir(String),
    /// The pins file could not be locked or written.
    #[error("cannot write the pins of server `{server}` to {}", .path.display())]
    Write {
        /// The server.
        server: String,
        /// The pins file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl crate::config::ConfigSet {
    /// The user file's top-level `pinning` (on when absent or broken).
    pub fn pinning_default(&self) -> bool {
        let user = self.settings(crate::config::Scope::User);
        !matches!(
            user.map(|u| &u.sections.pinning),
            Some(crate::config::settings::Checked::Ok(false))
        )
    }

    /// Whether a managed file forces pinning on for every server (`"pinning": true`; a
    /// broken value forces it too: a managed file fails closed).
    pub fn pinning_forced(&self) -> bool {
        let managed = self.settings(crate::config::Scope::Managed);
        matches!(
            managed.map(|m| &m.sections.pinning),
            Some(
                crate::config::settings::Checked::Ok(true)
                    | crate::config::settings::Checked::Broken
            )
        )
    }

    /// The user file's top-level `scanOnPin` (off when absent or broken).
    pub fn scan_on_pin_default(&self) -> bool {
        let user = self.settings(crate::config::Scope::User);
        matches!(
            user.map(|u| &u.sections.scan_on_pin),
            Some(crate::config::settings::Checked::Ok(true))
        )
    }
}

/// Every server's pins: files in `<state dir>/pins`.
#[derive(Debug)]
pub(crate) struct Pins {
    dir: Option<PathBuf>,
    /// The sessions (by their `ServerInfo`, alive while the session is) during which this
    /// process pinned a server first: whatever they list is trusted, as the first listing
    /// was (a server may add its tools one by one after connecting).
    first: Mutex<HashMap<String, Weak<ServerInfo>>>,
    /// The user file's top-level `pinning` (default on).
    default_on: bool,
    /// A managed file's `"pinning": true`: on for every server, whatever the entries say.
    forced: bool,
    /// The user file's top-level `scanOnPin` (default off).
    scan_default: bool,
    /// `serve --store`: the pins live there, shared by the replicas, not in files.
    store: Option<crate::shared::SharedStore>,
}

impl Pins {
    pub(crate) fn new(
        state_dir: Option<&Path>,
        default_on: bool,
        forced: bool,
        scan_default: bool,
    ) -> Pins {
        Pins {
            dir: state_dir.map(|d| d.join("pins")),
            first: Mutex::default(),
            default_on,
            forced,
            scan_default,
            store: None,
        }
    }

    /// Keeps the pins in the shared store (`serve --store`), under
    /// `switchboard:pins:<server>:<launch hash>`, so that every replica checks against the
    /// same pins and an approval made through one holds for all.
    pub(crate) fn with_store(mut self, store: Option<crate::shared::SharedStore>) -> Pins {
        self.store = store;
        self
    }

    fn store_key(config: &ServerConfig) -> String {
        format!(
            "{}pins:{}:{}",
            crate::shared::PREFIX,
            config.name,
            config.launch_hash.0
        )
    }

    /// Whether a tool the scan finds something of high severity in is held on first sight.
    fn scans(&self, config: &ServerConfig) -> bool {
        config.scan_on_pin.unwrap_or(self.scan_default)
    }

    /// Whether the server's tools are pinned.
    pub(crate) fn enabled(&self, config: &ServerConfig) -> bool {
        if matches!(config.transport, Transport::Sdk)
            || (self.dir.is_none() && self.store.is_none())
        {
            return false;
        }
        self.forced || config.pinning.unwrap_or(self.default_on)
    }

    /// `<server>.<launch hash>.json`: an entry launched otherwise is another server.
    fn path(&self, config: &ServerConfig) -> Option<PathBuf> {
        // Server names are `[A-Za-z0-9][A-Za-z0-9_-]*`, hashes hex: safe as file names.
        let name = format!("{}.{}.json", config.name, config.launch_hash.0);
        self.dir.as_ref().map(|d| d.join(name))
    }

    /// The server's pins: `Ok(None)` when it has none yet; `Err` when the file is there but
    /// cannot be read or parsed (nothing then matches: every tool is held, not trusted anew).
    pub(crate) fn read(&self, config: &ServerConfig) -> Result<Option<PinFile>, String> {
        if let Some(store) = &self.store {
            let key = Self::store_key(config);
            let text = match store.get_many_blocking(std::slice::from_ref(&key)) {
                Ok(mut texts) => match texts.pop().flatten() {
                    Some(text) => text,
                    None => return Ok(None),
                },
                Err(e) => return Err(format!("cannot read {key}: {e}")),
            };
            return serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| format!("{key}: {e}"));
        }
        let Some(path) = self.path(config) else {
            return Ok(None);
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The tools of `defs` that differ from their pins or are new. A server without pins has
    /// every tool it lists pinned now (trust on first use), and none held; so has one listed
    /// in `session` (the live session the list came from) when that is the first session.
    /// With `"scanOnPin": true`, a tool the scan finds something of high severity in is held,
    /// not pinned, on first sight too.
    pub(crate) fn check(
        &self,
        config: &ServerConfig,
        defs: &[ToolDef],
        session: Option<&Arc<ServerInfo>>,
    ) -> HeldPins {
        if !self.enabled(config) {
            return HeldPins::new();
        }
        let server = config.name.as_str();
        let flagged: HashMap<&str, Vec<Finding>> = if self.scans(config) {
            defs.iter()
                .map(|d| (d.name.as_str(), crate::scan::high_findings(server, d)))
                .filter(|(_, findings)| !findings.is_empty())
                .collect()
        } else {
            HashMap::new()
        };
        let now: Vec<(&str, Pin)> = defs
            .iter()
            .map(|d| (d.name.as_str(), Pin::tool(d)))
            .collect();
        let held_as = |name: &str, pin: Pin| HeldPin {
            pin,
            findings: flagged.get(name).cloned().unwrap_or_default(),
        };
        let pinned = match self.read(config) {
            Ok(Some(file)) => file,
            Ok(None) => {
                let (suspect, trusted): (Vec<_>, Vec<_>) = now
                    .iter()
                    .cloned()
                    .partition(|(name, _)| flagged.contains_key(name));
                match self.first_use(config, &trusted) {
                    Some(file) => file,
                    None => {
                        if let Some(session) = session {
                            self.first
                                .lock()
                                .insert(server.to_owned(), Arc::downgrade(session));
                        }
                        return suspect
                            .into_iter()
                            .map(|(name, pin)| (name.to_owned(), held_as(name, pin)))
                            .collect();
                    }
                }
            }
            Err(e) => {
                tracing::warn!(
                    server,
                    "the tool pins cannot be read, so every tool is held: {e}"
                );
                PinFile::default()
            }
        };
        let mut held: HeldPins = now
            .into_iter()
            .filter(|(name, pin)| {
                pinned
                    .tools
                    .get(*name)
                    .is_none_or(|p| p.sha256 != pin.sha256)
            })
            .map(|(name, pin)| (name.to_owned(), held_as(name, pin)))
            .collect();
        // During the first session, what the server adds is trusted as its first list was,
        // but for what the scan holds.
        let trusted: Vec<(String, Pin)> = held
            .iter()
            .filter(|(_, h)| h.findings.is_empty())
            .map(|(n, h)| (n.clone(), h.pin.clone()))
            .collect();
        if !trusted.is_empty() && self.in_first_session(server, session) {
            match self.edit(config, |current| {
                let mut file = current.clone().ok().flatten().unwrap_or_default();
                file.tools.extend(trusted.iter().cloned());
                Ok::<_, ()>(file)
            }) {
                Ok(_) => held.retain(|_, h| !h.findings.is_empty()),
                Err(e) => tracing::warn!("{}", crate::error_chain(&e)),
            }
        }
        held
    }

    /// `server`'s session `old` was replaced by `new` to tell it another offer
    /// ([`crate::Host::reconnect_told_otherwise`]): when `old` was the session this process
    /// pinned it in first, so is `new`. A server lists the tools that ask what the host now
    /// answers (a sampling client's `trigger-sampling-request`) only from then on, and they
    /// are trusted as the first listing was.
    pub(crate) fn reoffered(&self, server: &str, old: &Arc<ServerInfo>, new: &Arc<ServerInfo>) {
        let mut first = self.first.lock();
        if let Some(session) = first.get_mut(server)
            && session.upgrade().is_some_and(|s| Arc::ptr_eq(&s, old))
        {
            *session = Arc::downgrade(new);
        }
    }

    /// Whether `session` is the one this process pinned `server` in first.
    fn in_first_session(&self, server: &str, session: Option<&Arc<ServerInfo>>) -> bool {
        let Some(session) = session else {
            return false;
        };
        self.first
            .lock()
            .get(server)
            .and_then(Weak::upgrade)
            .is_some_and(|s| Arc::ptr_eq(&s, session))
    }

    /// Pins a server's first list, unless another process pinned it meanwhile (then its pins
    /// are what to check against: `Some`).
    fn first_use(&self, config: &ServerConfig, now: &[(&str, Pin)]) -> Option<PinFile> {
        let server = config.name.as_str();
        let result = self.edit(config, |current| {
            match current {
                Ok(None) => {}
                Ok(Some(existing)) => return Err(existing.clone()),
                // Broken meanwhile: nothing matches.
                Err(_) => return Err(PinFile::default()),
            }
            Ok(PinFile {
                hash: config.launch_hash.0.clone(),
                tools: now
                    .iter()
                    .map(|(n, p)| ((*n).to_owned(), p.clone()))
                    .collect(),
            })
        });
        match result {
            Ok(Ok(())) => {
                tracing::debug!(server, tools = now.len(), "pinned the tools on first use");
                None
            }
            Ok(Err(existing)) => Some(existing),
            Err(e) => {
                // Not kept: the next session pins again; nothing is held meanwhile.
                tracing::warn!("{}", crate::error_chain(&e));
                None
            }
        }
    }

    /// Pins what the server lists now: the `held` tool `only`, or all of them (and then the
    /// pins of tools no longer among `listed` go). The names pinned anew, sorted.
    pub(crate) fn approve(
        &self,
        config: &ServerConfig,
        held: &HeldPins,
        listed: &[String],
        only: Option<&str>,
    ) -> Result<Vec<String>, PinError> {
        let server = config.name.as_str();
        if !self.enabled(config) {
            return Err(PinError::Off(server.to_owned()));
        }
        let mut approved = BTreeSet::new();
        self.edit(config, |current| {
            // A file that cannot be read is replaced by the approval.
            let mut file = current.clone().ok().flatten().unwrap_or_default();
            if file.hash.is_empty() {
                file.hash.clone_from(&config.launch_hash.0);
            }
            if only.is_none() {
                file.tools.retain(|name, _| listed.contains(name));
            }
            for (name, held) in held {
                if only.is_some_and(|o| o != name) {
                    continue;
                }
                approved.insert(name.clone());
                file.tools.insert(name.clone(), held.pin.clone());
            }
            Ok::<_, ()>(file)
        })?
        .ok();
        Ok(approved.into_iter().collect())
    }

    /// Reads the server's pins under their lock, and writes what `change` makes of them
    /// (`Err`: nothing is written, and the error is handed back).
    fn edit<E>(
        &self,
        config: &ServerConfig,
        mut change: impl FnMut(&Result<Option<PinFile>, String>) -> Result<PinFile, E>,
    ) -> Result<Result<(), E>, PinError> {
        if self.store.is_some() {
            return self.edit_shared(config, change);
        }
        let server = config.name.as_str();
        let path = self
            .path(config)
            .ok_or_else(|| PinError::NoStateDir(server.to_owned()))?;
        let fail = |source: Box<dyn std::error::Error + Send + Sync>| PinError::Write {
            server: server.to_owned(),
            path: path.clone(),
            source,
        };
        let _lock = crate::config::FileLock::acquire(&path).map_err(|e| fail(Box::new(e)))?;
        let current = self.read(config);
        let file = match change(&current) {
            Ok(file) => file,
            Err(e) => return Ok(Err(e)),
        };
        let text = serde_json::to_vec_pretty(&file).map_err(|e| fail(Box::new(e)))?;
        crate::config::write_private(&path, &text).map_err(|e| fail(Box::new(e)))?;
        Ok(Ok(()))
    }

    /// [`edit`](Self::edit) in the shared store: pins made where there were none are written
    /// only if no replica wrote them meanwhile (`SET NX`); when one did, `change` runs again on
    /// its pins. Other changes (approvals) are written over what is there: two approvals at
    /// the same moment, the last one stands.
    fn edit_shared<E>(
        &self,
        config: &ServerConfig,
        mut change: impl FnMut(&Result<Option<PinFile>, String>) -> Result<PinFile, E>,
    ) -> Result<Result<(), E>, PinError> {
        let Some(store) = &self.store else {
            return Err(PinError::NoStateDir(config.name.as_str().to_owned()));
        };
        let key = Self::store_key(config);
        let fail = |source: Box<dyn std::error::Error + Send + Sync>| PinError::Write {
            server: config.name.as_str().to_owned(),
            path: PathBuf::from(&key),
            source,
        };
        // Twice at most: a second time only when another replica created the pins between
        // this one's read and its write; its pins are then what `change` sees.
        for _ in 0..2 {
            let current = self.read(config);
            let creating = matches!(current, Ok(None));
            let file = match change(&current) {
                Ok(file) => file,
                Err(e) => return Ok(Err(e)),
            };
            let text = serde_json::to_string(&file).map_err(|e| fail(Box::new(e)))?;
            let written = store
                .set_blocking(&key, &text, creating)
                .map_err(|e| fail(e.message.into()))?;
            if written {
                return Ok(Ok(()));
            }
        }
        Err(fail("the pins kept changing under this write".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str, schema: Value) -> ToolDef {
        ToolDef {
            name: name.to_owned(),
            title: None,
            description: Some(description.to_owned()),
            input_schema: schema,
            output_schema: None,
            annotations: crate::connection::Annotations::default(),
            icons: None,
            meta: None,
        }
    }

    #[test]
    fn a_pin_does_not_depend_on_key_order_and_sees_a_schema_change() {
        let a = tool(
            "echo",
            "says it back",
            serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        );
        let b = tool(
            "echo",
            "says it back",
            serde_json::json!({"properties": {"text": {"type": "string"}}, "type": "object"}),
        );
        assert_eq!(Pin::tool(&a).sha256, Pin::tool(&b).sha256);
        let c = tool(
            "echo",
            "says it back",
            serde_json::json!({"type": "object", "properties": {"text": {"type": "number"}}}),
        );
        assert_ne!(Pin::tool(&a).sha256, Pin::tool(&c).sha256);
        let change = PinChange::between(
            "s",
            "echo",
            Some(&Pin::tool(&a).definition),
            Some(&Pin::tool(&c).definition),
        );
        assert_eq!(
            change.retyped,
            vec![Retyped {
                name: "text".into(),
                old: "string".into(),
                new: "number".into()
            }]
        );
        assert!(change.other.is_empty(), "{:?}", change.other);
    }
}
