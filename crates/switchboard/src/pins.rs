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
//! Prompts are pinned likewise (name, title, description, arguments), in the file's `prompts`
//! beside its `tools`: each list is pinned on its own first use (pins written before prompts
//! were pinned have none, and get them on the next listing). A held prompt is left out of
//! [`Host::prompts`](crate::Host::prompts) and getting it fails; diffs and approvals cover
//! both.
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

    /// A prompt's pin: its name, title, description and arguments (each argument's name,
    /// title, description and whether it is required), from its definition as listed.
    pub(crate) fn prompt(def: &Value) -> Pin {
        let mut map = Map::new();
        for key in ["name", "title", "description"] {
            if let Some(value) = def.get(key).filter(|v| !v.is_null()) {
                map.insert(key.into(), value.clone());
            }
        }
        if let Some(arguments) = def.get("arguments").and_then(Value::as_array) {
            let arguments = arguments
                .iter()
                .map(|argument| {
                    let mut kept = Map::new();
                    for key in ["name", "title", "description", "required"] {
                        if let Some(value) = argument.get(key).filter(|v| !v.is_null()) {
                            kept.insert(key.into(), value.clone());
                        }
                    }
                    Value::Object(kept)
                })
                .collect();
            map.insert("arguments".into(), Value::Array(arguments));
        }
        Pin::of(Value::Object(map))
    }
}

/// What a pin is of: a server's tools and its prompts are pinned alike, each list on its own
/// (a server first listed its prompts long after its tools were pinned has them pinned then).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum PinEntry {
    /// A tool (`tools/list`).
    Tool,
    /// A prompt (`prompts/list`).
    Prompt,
}

/// A server's pins, as kept in its file.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PinFile {
    /// The entry's launch hash when the pins were first made.
    #[serde(default)]
    pub(crate) hash: String,
    /// Every pinned tool by its name on the server: the set of names is pinned too (`None`:
    /// the tools were never pinned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tools: Option<BTreeMap<String, Pin>>,
    /// Every pinned prompt, likewise (`None`: the prompts were never pinned; pins written
    /// before prompts were pinned have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) prompts: Option<BTreeMap<String, Pin>>,
}

impl PinFile {
    /// The pins of one list, if it was pinned.
    pub(crate) fn list(&self, entry: PinEntry) -> Option<&BTreeMap<String, Pin>> {
        match entry {
            PinEntry::Tool => self.tools.as_ref(),
            PinEntry::Prompt => self.prompts.as_ref(),
        }
    }

    fn list_mut(&mut self, entry: PinEntry) -> &mut Option<BTreeMap<String, Pin>> {
        match entry {
            PinEntry::Tool => &mut self.tools,
            PinEntry::Prompt => &mut self.prompts,
        }
    }

    /// The pin of one tool or prompt.
    pub(crate) fn pin(&self, entry: PinEntry, name: &str) -> Option<&Pin> {
        self.list(entry)?.get(name)
    }
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
    /// Whether it is a tool or a prompt.
    pub entry: PinEntry,
    /// The tool's (or the prompt's) name on its server.
    pub tool: String,
    /// What happened to it.
    pub kind: ChangeKind,
    /// The pinned description (`None`: none, or a new tool).
    pub old_description: Option<String>,
    /// The description now (`None`: none, or a removed tool).
    pub new_description: Option<String>,
    /// Parameters (input schema `properties`; a prompt's `arguments`) the pin did not have.
    pub added: Vec<String>,
    /// Pinned parameters (or arguments) no longer there.
    pub removed: Vec<String>,
    /// Parameters whose type changed (a prompt's arguments have no type).
    pub retyped: Vec<Retyped>,
    /// Other parts that changed: `title`, `required`, `inputSchema` (any other change of
    /// it), `outputSchema`, `annotations`, `_meta.ui`; a prompt's `title`, `required` (which
    /// arguments are) and `arguments` (any other change of them).
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
            entry: PinEntry::Tool,
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

    /// How a prompt `now` (`None`: removed) differs from `pinned` (`None`: new): arguments
    /// added and removed, and which other parts changed.
    pub(crate) fn between_prompts(
        server: &str,
        prompt: &str,
        pinned: Option<&Value>,
        now: Option<&Value>,
    ) -> PinChange {
        let arguments = |d: Option<&Value>| -> BTreeMap<String, Value> {
            d.and_then(|d| d.get("arguments")?.as_array())
                .map(|args| {
                    args.iter()
                        .filter_map(|a| Some((a.get("name")?.as_str()?.to_owned(), a.clone())))
                        .collect()
                })
                .unwrap_or_default()
        };
        let (before, after) = (arguments(pinned), arguments(now));
        let mut change = PinChange::between(server, prompt, pinned, now);
        change.entry = PinEntry::Prompt;
        change.added = after
            .keys()
            .filter(|k| !before.contains_key(*k))
            .cloned()
            .collect();
        change.removed = before
            .keys()
            .filter(|k| !after.contains_key(*k))
            .cloned()
            .collect();
        change.retyped.clear();
        change.other.clear();
        if let (Some(pinned), Some(now)) = (pinned, now) {
            if pinned.get("title") != now.get("title") {
                change.other.push("title".to_owned());
            }
            let required = |args: &BTreeMap<String, Value>| -> BTreeSet<String> {
                args.iter()
                    .filter(|(_, a)| a.get("required").and_then(Value::as_bool) == Some(true))
                    .map(|(name, _)| name.clone())
                    .collect()
            };
            if required(&before) != required(&after) {
                change.other.push("required".to_owned());
            }
            let rest = |args: &BTreeMap<String, Value>| -> BTreeMap<String, Value> {
                args.iter()
                    .filter(|(name, _)| before.contains_key(*name) && after.contains_key(*name))
                    .map(|(name, a)| {
                        let mut a = a.clone();
                        if let Some(map) = a.as_object_mut() {
                            map.remove("required");
                        }
                        (name.clone(), a)
                    })
                    .collect()
            };
            if rest(&before) != rest(&after) {
                change.other.push("arguments".to_owned());
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

/// A session replaced by another (old, new), to tell the server another offer.
type Replacement = (Weak<ServerInfo>, Weak<ServerInfo>);

/// Every server's pins: files in `<state dir>/pins`.
#[derive(Debug)]
pub(crate) struct Pins {
    dir: Option<PathBuf>,
    /// The sessions (by their `ServerInfo`, alive while the session is) during which this
    /// process pinned a server first: whatever they list is trusted, as the first listing
    /// was (a server may add its tools one by one after connecting).
    first: Mutex<HashMap<(String, PinEntry), Weak<ServerInfo>>>,
    /// Each server's sessions replaced to tell it another offer, old by new ([`Pins::reoffered`]):
    /// a first session recorded after its replacement (its listing was under way) still leads
    /// to the session that replaced it.
    replaced: Mutex<HashMap<String, Vec<Replacement>>>,
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
            replaced: Mutex::default(),
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

    /// Whether the server's prompts were pinned (a file that cannot be read counts as
    /// pinned: nothing then matches, and every prompt is held).
    pub(crate) fn prompts_pinned(&self, config: &ServerConfig) -> bool {
        self.read(config)
            .map_or(true, |file| file.and_then(|f| f.prompts).is_some())
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
        let flagged: HashMap<String, Vec<Finding>> = if self.scans(config) {
            defs.iter()
                .map(|d| (d.name.clone(), crate::scan::high_findings(server, d)))
                .filter(|(_, findings)| !findings.is_empty())
                .collect()
        } else {
            HashMap::new()
        };
        let now = defs
            .iter()
            .map(|d| (d.name.clone(), Pin::tool(d)))
            .collect();
        self.check_list(config, PinEntry::Tool, now, &flagged, session)
    }

    /// [`check`](Self::check) for the prompts a server lists (`defs`, as MCP JSON): those
    /// that differ from their pins or are new, by name.
    pub(crate) fn check_prompts(
        &self,
        config: &ServerConfig,
        defs: &[Value],
        session: Option<&Arc<ServerInfo>>,
    ) -> HeldPins {
        if !self.enabled(config) {
            return HeldPins::new();
        }
        let server = config.name.as_str();
        let named: Vec<(String, &Value)> = defs
            .iter()
            .filter_map(|d| Some((d.get("name")?.as_str()?.to_owned(), d)))
            .collect();
        let flagged: HashMap<String, Vec<Finding>> = if self.scans(config) {
            named
                .iter()
                .map(|(name, def)| {
                    let entry = crate::host::PromptEntry {
                        name: crate::name::QualifiedName::new(server, name).into_string(),
                        server: server.to_owned(),
                        prompt: name.clone(),
                        definition: (*def).clone(),
                    };
                    let findings: Vec<Finding> =
                        crate::scan::scan_prompts(std::slice::from_ref(&entry))
                            .into_iter()
                            .filter(|f| f.severity == crate::scan::Severity::High)
                            .collect();
                    (name.clone(), findings)
                })
                .filter(|(_, findings)| !findings.is_empty())
                .collect()
        } else {
            HashMap::new()
        };
        let now = named
            .into_iter()
            .map(|(name, def)| (name, Pin::prompt(def)))
            .collect();
        self.check_list(config, PinEntry::Prompt, now, &flagged, session)
    }

    /// What [`check`](Self::check) and [`check_prompts`](Self::check_prompts) share: `now`
    /// (each name listed, with the pin its definition has) against the pins of `entry`'s list.
    fn check_list(
        &self,
        config: &ServerConfig,
        entry: PinEntry,
        now: Vec<(String, Pin)>,
        flagged: &HashMap<String, Vec<Finding>>,
        session: Option<&Arc<ServerInfo>>,
    ) -> HeldPins {
        let server = config.name.as_str();
        let held_as = |name: &str, pin: Pin| HeldPin {
            pin,
            findings: flagged.get(name).cloned().unwrap_or_default(),
        };
        let pinned = match self.read(config) {
            Ok(Some(file)) if file.list(entry).is_some() => file,
            Ok(_) => {
                let (suspect, trusted): (Vec<_>, Vec<_>) = now
                    .iter()
                    .cloned()
                    .partition(|(name, _)| flagged.contains_key(name));
                match self.first_use(config, entry, &trusted) {
                    Some(file) => file,
                    None => {
                        if let Some(session) = session {
                            self.first
                                .lock()
                                .insert((server.to_owned(), entry), Arc::downgrade(session));
                        }
                        return suspect
                            .into_iter()
                            .map(|(name, pin)| {
                                let held = held_as(&name, pin);
                                (name, held)
                            })
                            .collect();
                    }
                }
            }
            Err(e) => {
                tracing::warn!(
                    server,
                    "the pins cannot be read, so every tool and prompt is held: {e}"
                );
                PinFile::default()
            }
        };
        let mut held: HeldPins = now
            .into_iter()
            .filter(|(name, pin)| {
                pinned
                    .pin(entry, name)
                    .is_none_or(|p| p.sha256 != pin.sha256)
            })
            .map(|(name, pin)| {
                let held = held_as(&name, pin);
                (name, held)
            })
            .collect();
        // During the first session, what the server adds is trusted as its first list was,
        // but for what the scan holds.
        let trusted: Vec<(String, Pin)> = held
            .iter()
            .filter(|(_, h)| h.findings.is_empty())
            .map(|(n, h)| (n.clone(), h.pin.clone()))
            .collect();
        if !trusted.is_empty() && self.in_first_session(server, entry, session) {
            match self.edit(config, |current| {
                let mut file = current.clone().ok().flatten().unwrap_or_default();
                file.list_mut(entry)
                    .get_or_insert_default()
                    .extend(trusted.iter().cloned());
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
        {
            let mut replaced = self.replaced.lock();
            let chain = replaced.entry(server.to_owned()).or_default();
            // Sessions gone and not replaced since lead nowhere: forgotten.
            chain.retain(|(_, n)| n.strong_count() > 0);
            chain.push((Arc::downgrade(old), Arc::downgrade(new)));
        }
        let mut first = self.first.lock();
        for entry in [PinEntry::Tool, PinEntry::Prompt] {
            if let Some(session) = first.get_mut(&(server.to_owned(), entry))
                && session.upgrade().is_some_and(|s| Arc::ptr_eq(&s, old))
            {
                *session = Arc::downgrade(new);
            }
        }
    }

    /// Whether `session` is the one this process pinned `server`'s `entry` list in first.
    fn in_first_session(
        &self,
        server: &str,
        entry: PinEntry,
        session: Option<&Arc<ServerInfo>>,
    ) -> bool {
        let Some(session) = session else {
            return false;
        };
        let Some(mut first) = self.first.lock().get(&(server.to_owned(), entry)).cloned() else {
            return false;
        };
        // The first session, or the session that replaced it (and so on) to tell the server
        // another offer.
        let replaced = self.replaced.lock();
        let chain = replaced.get(server).map(Vec::as_slice).unwrap_or_default();
        for _ in 0..=chain.len() {
            if std::ptr::eq(first.as_ptr(), Arc::as_ptr(session)) {
                return true;
            }
            match chain.iter().find(|(old, _)| old.ptr_eq(&first)) {
                Some((_, new)) => first = new.clone(),
                None => return false,
            }
        }
        false
    }

    /// Pins a server's first list of `entry`, unless another process pinned it meanwhile
    /// (then its pins are what to check against: `Some`).
    fn first_use(
        &self,
        config: &ServerConfig,
        entry: PinEntry,
        now: &[(String, Pin)],
    ) -> Option<PinFile> {
        let server = config.name.as_str();
        let result = self.edit(config, |current| {
            let mut file = match current {
                Ok(None) => PinFile {
                    hash: config.launch_hash.0.clone(),
                    ..PinFile::default()
                },
                Ok(Some(existing)) if existing.list(entry).is_some() => {
                    return Err(existing.clone());
                }
                Ok(Some(existing)) => existing.clone(),
                // Broken meanwhile: nothing matches.
                Err(_) => return Err(PinFile::default()),
            };
            *file.list_mut(entry) = Some(now.iter().cloned().collect());
            Ok(file)
        });
        match result {
            Ok(Ok(())) => {
                tracing::debug!(server, ?entry, count = now.len(), "pinned on first use");
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

    /// Pins what the server lists now of `entry`: the `held` one `only`, or all of them (and
    /// then the pins of those no longer among `listed` go). The names pinned anew, sorted.
    pub(crate) fn approve(
        &self,
        config: &ServerConfig,
        entry: PinEntry,
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
            let pins = file.list_mut(entry).get_or_insert_default();
            if only.is_none() {
                pins.retain(|name, _| listed.contains(name));
            }
            for (name, held) in held {
                if only.is_some_and(|o| o != name) {
                    continue;
                }
                approved.insert(name.clone());
                pins.insert(name.clone(), held.pin.clone());
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

    /// Pins written before prompts were pinned have tools only: the first prompt listing pins
    /// the prompts (nothing held), and the tools keep their pins (a changed tool is held).
    #[test]
    fn pins_without_prompts_get_them_on_first_listing_and_keep_their_tools() {
        let state = tempfile::tempdir().unwrap();
        let origin = crate::config::Origin {
            scope: crate::config::Scope::User,
            file: None,
        };
        let entry = serde_json::json!({"command": "true"});
        let env = crate::config::Environment::capture();
        let config = crate::config::parse_entry_value("kit", &entry, origin, &env, "<test>")
            .unwrap()
            .0;
        let pins = Pins::new(Some(state.path()), true, false, false);
        let schema = serde_json::json!({"type": "object"});
        let echo = tool("echo", "says it back", schema.clone());
        assert!(
            pins.check(&config, std::slice::from_ref(&echo), None)
                .is_empty()
        );
        let path = pins.path(&config).unwrap();
        let written: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert!(written.get("prompts").is_none(), "{written}");

        let prompt = serde_json::json!({"name": "review", "description": "reviews code",
                                        "arguments": [{"name": "code", "required": true}]});
        assert!(
            pins.check_prompts(&config, std::slice::from_ref(&prompt), None)
                .is_empty()
        );
        assert!(pins.prompts_pinned(&config));
        let changed = serde_json::json!({"name": "review", "description": "reviews code",
                                         "arguments": [{"name": "code"}]});
        let held = pins.check_prompts(&config, std::slice::from_ref(&changed), None);
        assert_eq!(held.keys().collect::<Vec<_>>(), ["review"]);
        let change = PinChange::between_prompts(
            "kit",
            "review",
            Some(&Pin::prompt(&prompt).definition),
            Some(&held["review"].pin.definition),
        );
        assert_eq!(change.entry, PinEntry::Prompt);
        assert_eq!(change.other, ["required"]);

        let louder = tool("echo", "says it loud", schema);
        assert_eq!(
            pins.check(&config, &[louder], None)
                .keys()
                .collect::<Vec<_>>(),
            ["echo"]
        );
        assert!(pins.check(&config, &[echo], None).is_empty());
    }
}
