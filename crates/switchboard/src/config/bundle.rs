//! MCPB bundles (`.mcpb`, formerly `.dxt`): a zip holding `manifest.json` and a server.
//!
//! [`install_bundle`] reads the manifest (versions 0.2 to 0.4; every problem names the bundle
//! file and the field), checks `compatibility` (platforms; `node`/`python` on `PATH` within
//! the ranges given), gathers the `user_config` values (given, kept from the installed
//! version, asked through the caller, or defaults), unpacks the archive to
//! `<state dir>/bundles/<name>/` (no entry may land outside it) and writes an `mcpServers`
//! entry built from `server.mcp_config`, with `${__dirname}`, `${HOME}`, `${DESKTOP}`,
//! `${DOCUMENTS}`, `${DOWNLOADS}`, `${pathSeparator}` and `${user_config.KEY}` replaced.
//!
//! Sensitive values never reach a file of configuration: they go to the [`SecretStore`] (the
//! keychain, or the owner-only file) under `bundle:<bundle>:<key>`, and the entry keeps
//! `${user_config.KEY}` as written. The entry's `bundle` key records the bundle (name,
//! version, folder, source, signature, the other values, the sensitive keys); the loader
//! sets the `user_config.KEY` variables of that entry alone from the store
//! (`entry_environment`). A newer version of an installed bundle (same manifest `name`)
//! replaces it in place, keeping its values; [`uninstall_bundle`] removes the entry, the
//! folder and the secrets.
//!
//! Signatures (`mcpb sign`, a PKCS#7 block after the zip) are checked (`signature.rs`): the
//! digest, the signature, and the signer's chain to the system's roots for code signing. A
//! signature that does not hold refuses the install (unless forced); the record keeps the
//! verdict for `mcp get`.

mod archive;
mod compat;
mod manifest;
mod signature;
mod user_config;

pub use user_config::{FieldKind, UserConfigField};

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::edit::ConfigEdit;
use super::expand::USER_CONFIG_PREFIX;
use super::{ConfigError, ConfigSet, Environment, Scope, ServerEntry, ServerName};
use crate::env_vars::EnvVars;
use crate::secrets::{SecretError, SecretStore};
use archive::Archive;
use compat::{check_compatibility, find_program, is_newer, platform};
use manifest::{Manifest, McpConfig};
use user_config::gather;

/// The key of an `mcpServers` entry that records the bundle it was installed from.
pub const BUNDLE_KEY: &str = "bundle";

/// Why a bundle could not be installed or uninstalled.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BundleError {
    /// The bundle itself is wrong, or does not fit this machine (the message names the
    /// manifest's field or the archive's entry).
    #[error("{}: {message}", file.display())]
    Invalid { file: PathBuf, message: String },
    /// The same or a newer version is installed.
    #[error(
        "bundle `{name}` {installed} is already installed ({scope} scope); {given} is not newer\n  hint: add --force to install it again"
    )]
    NotNewer {
        name: String,
        installed: String,
        given: String,
        scope: Scope,
    },
    #[error("no bundle installed as `{name}`")]
    NotInstalled { name: String },
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("the secret store: {0}")]
    Secret(#[from] SecretError),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What a bundle's signature block (`mcpb sign`) says.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BundleSignature {
    Unsigned,
    /// A signature block recorded without a check (an older record).
    Present,
    /// A valid signature; `trusted`: its certificate chains to a root this system trusts for
    /// code signing, else `why` not.
    Signed {
        signer: String,
        trusted: bool,
        why: Option<String>,
    },
    /// A signature that does not hold for this archive (the reason).
    Invalid(String),
}

impl BundleSignature {
    fn from_verdict(verdict: Option<signature::Verdict>) -> BundleSignature {
        match verdict {
            None => BundleSignature::Unsigned,
            Some(signature::Verdict::Trusted { signer }) => BundleSignature::Signed {
                signer,
                trusted: true,
                why: None,
            },
            Some(signature::Verdict::Untrusted { signer, why }) => BundleSignature::Signed {
                signer,
                trusted: false,
                why: Some(why),
            },
            Some(signature::Verdict::Invalid { why }) => BundleSignature::Invalid(why),
        }
    }

    fn to_value(&self) -> Value {
        match self {
            BundleSignature::Unsigned => json!("unsigned"),
            BundleSignature::Present => json!("present"),
            BundleSignature::Signed {
                signer,
                trusted,
                why,
            } => json!({"signer": signer, "trusted": trusted, "why": why}),
            BundleSignature::Invalid(why) => json!({"invalid": why}),
        }
    }

    fn from_value(value: Option<&Value>) -> BundleSignature {
        let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
        match value {
            Some(Value::String(s)) if s == "present" => BundleSignature::Present,
            Some(v @ Value::Object(_)) => match (text(v, "signer"), text(v, "invalid")) {
                (Some(signer), _) => BundleSignature::Signed {
                    signer,
                    trusted: v.get("trusted").and_then(Value::as_bool).unwrap_or(false),
                    why: text(v, "why"),
                },
                (None, Some(why)) => BundleSignature::Invalid(why),
                (None, None) => BundleSignature::Present,
            },
            _ => BundleSignature::Unsigned,
        }
    }
}

impl fmt::Display for BundleSignature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BundleSignature::Unsigned => f.write_str("unsigned"),
            BundleSignature::Present => f.write_str("present (not verified)"),
            BundleSignature::Signed {
                signer,
                trusted: true,
                ..
            } => write!(f, "signed by {signer}"),
            BundleSignature::Signed { signer, why, .. } => write!(
                f,
                "signed by {signer}, not trusted: {}",
                why.as_deref().unwrap_or("unknown")
            ),
            BundleSignature::Invalid(why) => write!(f, "invalid: {why}"),
        }
    }
}

/// What an entry's `bundle` key records.
#[derive(Debug, Clone, PartialEq)]
pub struct BundleRecord {
    /// The manifest's `name`.
    pub name: String,
    pub version: String,
    /// The unpacked folder.
    pub path: PathBuf,
    /// What it was installed from (the file, or what the caller named).
    pub source: String,
    pub signature: BundleSignature,
    /// Values of the fields that are not sensitive (text, or a list for `multiple`).
    pub user_config: serde_json::Map<String, Value>,
    /// The sensitive fields given, kept in the secret store.
    pub secrets: Vec<String>,
}

impl BundleRecord {
    fn from_value(value: &Value) -> Option<BundleRecord> {
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        Some(BundleRecord {
            name: text("name")?,
            version: text("version").unwrap_or_default(),
            path: PathBuf::from(text("path")?),
            source: text("source").unwrap_or_default(),
            signature: BundleSignature::from_value(value.get("signature")),
            user_config: value
                .get("userConfig")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            secrets: value
                .get("secrets")
                .and_then(Value::as_array)
                .map(|keys| {
                    keys.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
        })
    }

    fn to_value(&self) -> Value {
        json!({
            "name": self.name,
            "version": self.version,
            "path": self.path.to_string_lossy(),
            "source": self.source,
            "signature": self.signature.to_value(),
            "userConfig": self.user_config,
            "secrets": self.secrets,
        })
    }
}

/// The bundle an entry was installed from, if it was.
pub fn bundle_record(entry: &ServerEntry) -> Option<BundleRecord> {
    entry.raw.get(BUNDLE_KEY).and_then(BundleRecord::from_value)
}

/// The secret store's key of a bundle's sensitive value.
fn secret_key(bundle: &str, key: &str) -> String {
    format!("bundle:{bundle}:{key}")
}

/// The environment an entry is expanded with, given its `bundle` value: when it has sensitive
/// values, `env` plus `user_config.KEY` for each, read from `store` (else `None`). A
/// value the store cannot give is left unset (the entry then names the missing variable);
/// the store's error is the second part.
pub(crate) fn entry_environment(
    bundle: &Value,
    env: &Environment,
    store: &SecretStore,
) -> Option<(Environment, Option<String>)> {
    let record = BundleRecord::from_value(bundle)?;
    if record.secrets.is_empty() {
        return None;
    }
    let mut out = env.clone();
    let mut problem = None;
    for key in &record.secrets {
        match store.get(&secret_key(&record.name, key)) {
            Ok(Some(value)) => out.set(format!("{USER_CONFIG_PREFIX}{key}"), value),
            Ok(None) => {}
            Err(e) => problem = Some(e.to_string()),
        }
    }
    Some((out, problem))
}

/// Answers a field the caller was not given a value for: its values as text, `None` to take
/// the default (or leave an optional field unset).
pub type AskField<'a> = &'a mut dyn FnMut(&UserConfigField) -> Option<Vec<String>>;

/// How to install a bundle.
pub struct InstallOptions<'a> {
    /// Where the entry goes (an upgrade stays where the installed version is).
    pub scope: Scope,
    /// `user_config` values given (`KEY`, `VALUE`; a key repeated for a `multiple` field).
    pub values: Vec<(String, String)>,
    /// Install even when the same or a newer version is installed; replace an entry of the
    /// same name that no bundle made.
    pub force: bool,
    /// Asks for fields without a value; without it a required one is an error.
    pub ask: Option<AskField<'a>>,
    /// What the record names as the source (default: the file's absolute path).
    pub source: Option<String>,
}

impl fmt::Debug for InstallOptions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Values may be secrets: keys only.
        let keys: Vec<&str> = self.values.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("InstallOptions")
            .field("scope", &self.scope)
            .field("values", &keys)
            .field("force", &self.force)
            .field("ask", &self.ask.is_some())
            .field("source", &self.source)
            .finish()
    }
}

impl InstallOptions<'_> {
    pub fn new(scope: Scope) -> InstallOptions<'static> {
        InstallOptions {
            scope,
            values: Vec::new(),
            force: false,
            ask: None,
            source: None,
        }
    }
}

/// What [`install_bundle`] did.
#[derive(Debug, Clone)]
pub struct InstalledBundle {
    /// The entry's name.
    pub server: String,
    pub record: BundleRecord,
    pub scope: Scope,
    /// The file the entry was written to.
    pub file: PathBuf,
    /// The version replaced, on an upgrade (or a forced reinstall).
    pub replaced: Option<String>,
    /// Where the sensitive values went, when there were any.
    pub secret_store: Option<String>,
}

/// What a bundle's manifest says, read from its file without installing it.
#[derive(Debug, Clone)]
pub struct BundleInfo {
    pub name: String,
    pub display_name: Option<String>,
    pub version: String,
    pub description: Option<String>,
    pub user_config: Vec<UserConfigField>,
    pub signature: BundleSignature,
}

/// A bundle's file, read and checked.
struct Opened {
    file: PathBuf,
    archive: Archive,
    manifest: Manifest,
    info: BundleInfo,
}

impl Opened {
    fn invalid(&self, message: impl Into<String>) -> BundleError {
        BundleError::Invalid {
            file: self.file.clone(),
            message: message.into(),
        }
    }
}

/// Where the well-known folders are, for `${HOME}` and its neighbours.
struct Places {
    home: String,
}

impl Places {
    fn new(env: &Environment) -> Places {
        Places {
            home: env.get(EnvVars::HOME).unwrap_or("/").to_owned(),
        }
    }

    fn get(&self, name: &str) -> Option<String> {
        let under = |dir: &str| format!("{}/{dir}", self.home.trim_end_matches('/'));
        Some(match name {
            "HOME" => self.home.clone(),
            "DESKTOP" => under("Desktop"),
            "DOCUMENTS" => under("Documents"),
            "DOWNLOADS" => under("Downloads"),
            "pathSeparator" => std::path::MAIN_SEPARATOR.to_string(),
            _ => return None,
        })
    }

    /// `text` with the well-known folders replaced (other references kept as written).
    fn replace(&self, text: &str) -> String {
        replace_refs(text, |name| self.get(name))
    }
}

/// Replaces each `${NAME}` for which `lookup` has a value; the rest is kept as written.
fn replace_refs(text: &str, mut lookup: impl FnMut(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        match lookup(&after[..end]) {
            Some(value) => out.push_str(&value),
            None => out.push_str(&rest[start..start + 3 + end]),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Reads a bundle's file: its manifest, checked.
pub fn read_bundle(file: &Path, env: &Environment) -> Result<BundleInfo, BundleError> {
    open(file, file, env).map(|opened| opened.info)
}

/// Reads the bundle at `path`; messages name it as `file` (as the user wrote it).
fn open(path: &Path, file: &Path, env: &Environment) -> Result<Opened, BundleError> {
    let invalid = |message: String| BundleError::Invalid {
        file: file.to_owned(),
        message,
    };
    let io = |source| BundleError::Io {
        path: file.to_owned(),
        source,
    };
    // Read where it is, never into memory whole; only a file has an end to check (a device
    // such as `/dev/zero` or a pipe has none, and is not read).
    let opened = std::fs::File::open(path).map_err(io)?;
    let meta = opened.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(invalid(format!(
            "it is not a file (a device, a pipe or a folder); a bundle is read from a file of \
             at most {} MiB",
            archive::MAX_FILE >> 20
        )));
    }
    if meta.len() > archive::MAX_FILE {
        return Err(invalid(archive::too_large()));
    }
    let mut archive = Archive::open(opened).map_err(invalid)?;
    let text = archive.manifest().map_err(invalid)?;
    let manifest =
        manifest::read(&text).map_err(|message| invalid(format!("manifest.json:{message}")))?;
    let signature = BundleSignature::from_verdict(archive.signature.take());
    let info = check(&manifest, signature, &Places::new(env))
        .map_err(|message| invalid(format!("manifest.json: {message}")))?;
    Ok(Opened {
        file: file.to_owned(),
        archive,
        manifest,
        info,
    })
}

/// The manifest's required fields and `user_config`, checked.
fn check(m: &Manifest, signature: BundleSignature, places: &Places) -> Result<BundleInfo, String> {
    let version = m
        .manifest_version
        .as_ref()
        .or(m.dxt_version.as_ref())
        .ok_or("manifest_version: missing")?;
    if !manifest::VERSIONS.contains(&version.0.as_str()) {
        return Err(format!(
            "manifest_version: `{}` is not one Switchboard reads ({})",
            version.0,
            manifest::VERSIONS.join(", ")
        ));
    }
    let name = m.name.as_ref().ok_or("name: missing")?.0.clone();
    if ServerName::sanitize(&name).is_empty() {
        return Err(format!("name: `{name}` has no letter or digit"));
    }
    let bundle_version = m.version.as_ref().ok_or("version: missing")?.0.clone();
    let server = m.server.as_ref().ok_or("server: missing")?;
    let kind = server.0.kind.as_ref().ok_or("server.type: missing")?;
    if !["node", "python", "binary", "uv"].contains(&kind.0.as_str()) {
        return Err(format!(
            "server.type: `{}` is not node, python, binary or uv",
            kind.0
        ));
    }
    match &server.0.mcp_config {
        Some(config) if config.0.command.is_none() => {
            return Err("server.mcp_config.command: missing".to_owned());
        }
        None if kind.0 != "uv" => return Err("server.mcp_config: missing".to_owned()),
        None if server.0.entry_point.is_none() => {
            return Err("server.entry_point: missing (a uv server without mcp_config)".to_owned());
        }
        _ => {}
    }
    let mut fields = Vec::new();
    for (key, field) in &m.user_config.0 {
        let f = &field.0;
        let at = format!("user_config.{key}");
        let kind = match f.kind.as_ref().map(|k| k.0.as_str()) {
            Some("string") => FieldKind::String,
            Some("number") => FieldKind::Number,
            Some("boolean") => FieldKind::Boolean,
            Some("directory") => FieldKind::Directory,
            Some("file") => FieldKind::File,
            Some(other) => {
                return Err(format!(
                    "{at}.type: `{other}` is not string, number, boolean, directory or file"
                ));
            }
            None => return Err(format!("{at}.type: missing")),
        };
        let default = match &f.default {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => Some(
                items
                    .iter()
                    .map(|v| plain(v).map(|t| places.replace(&t)))
                    .collect::<Option<Vec<_>>>()
                    .ok_or(format!("{at}.default: expected strings in the list"))?,
            ),
            Some(v) => Some(vec![plain(v).map(|t| places.replace(&t)).ok_or(
                format!("{at}.default: expected a string, number or boolean"),
            )?]),
        };
        let field = UserConfigField {
            key: key.clone(),
            kind,
            title: f.title.as_ref().map(|t| t.0.clone()),
            description: f.description.as_ref().map(|t| t.0.clone()),
            required: f.required.is_some_and(|b| b.0),
            default,
            multiple: f.multiple.is_some_and(|b| b.0),
            sensitive: f.sensitive.is_some_and(|b| b.0),
            min: f.min.map(|n| n.0),
            max: f.max.map(|n| n.0),
        };
        if let Some(default) = &field.default {
            field
                .check(default)
                .map_err(|e| format!("{at}.default: {e}"))?;
        }
        fields.push(field);
    }
    Ok(BundleInfo {
        name,
        display_name: m.display_name.as_ref().map(|t| t.0.clone()),
        version: bundle_version,
        description: m.description.as_ref().map(|t| t.0.clone()),
        user_config: fields,
        signature,
    })
}

/// A JSON scalar as text.
fn plain(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Installs (or upgrades) the bundle in `file`: see the module's documentation. `set` is the
/// configuration as loaded (where an installed version is found).
pub fn install_bundle(
    set: &ConfigSet,
    env: &Environment,
    file: &Path,
    options: InstallOptions<'_>,
) -> Result<InstalledBundle, BundleError> {
    let paths = &set.paths;
    let file_abs = std::path::absolute(paths.cwd.join(file)).unwrap_or_else(|_| file.to_owned());
    let mut opened = open(&file_abs, file, env)?;
    check_compatibility(&opened.manifest, env, &paths.cwd).map_err(|m| opened.invalid(m))?;
    let info = opened.info.clone();
    if let BundleSignature::Invalid(why) = &info.signature
        && !options.force
    {
        return Err(opened.invalid(format!(
            "signature invalid: {why}\n  hint: --force installs it anyway"
        )));
    }
    let server = ServerName::sanitize(&info.name);

    // An installed version: where, which version, with which values.
    let installed = set
        .servers
        .iter()
        .filter(|e| Scope::WRITABLE.contains(&e.origin.scope))
        .find_map(|e| {
            bundle_record(e)
                .filter(|r| r.name == info.name)
                .map(|r| (e, r))
        });
    if let Some((entry, record)) = &installed
        && !options.force
        && !is_newer(&info.version, &record.version)
    {
        return Err(BundleError::NotNewer {
            name: info.name.clone(),
            installed: record.version.clone(),
            given: info.version.clone(),
            scope: entry.origin.scope,
        });
    }
    let scope = installed
        .as_ref()
        .map_or(options.scope, |(e, _)| e.origin.scope);
    let server = installed.as_ref().map_or(server, |(e, _)| e.name.clone());
    let store = SecretStore::from_env(&paths.state_dir, env);

    let values = gather(
        &opened,
        installed.as_ref().map(|(_, r)| r),
        &store,
        options.values,
        options.ask,
        &Places::new(env),
        &paths.cwd,
    )?;

    // Unpack beside the final folder, then swap.
    let bundles = paths.state_dir.join("bundles");
    super::edit::create_private_dir(&bundles).map_err(|source| BundleError::Io {
        path: bundles.clone(),
        source,
    })?;
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| BundleError::Io { path, source }
    };
    let fresh = tempfile::Builder::new()
        .prefix(".unpack-")
        .tempdir_in(&bundles)
        .map_err(io(&bundles))?;
    opened
        .archive
        .unpack(fresh.path())
        .map_err(|m| opened.invalid(m))?;
    let folder = bundles.join(&server);

    let mut record = BundleRecord {
        name: info.name.clone(),
        version: info.version.clone(),
        path: folder.clone(),
        source: options
            .source
            .unwrap_or_else(|| file_abs.to_string_lossy().into_owned()),
        signature: info.signature.clone(),
        user_config: serde_json::Map::new(),
        secrets: Vec::new(),
    };
    let sensitive: BTreeSet<&str> = info
        .user_config
        .iter()
        .filter(|f| f.sensitive)
        .map(|f| f.key.as_str())
        .collect();
    for field in &info.user_config {
        let Some(given) = values.get(&field.key) else {
            continue;
        };
        if field.sensitive {
            record.secrets.push(field.key.clone());
        } else if field.multiple {
            record.user_config.insert(field.key.clone(), json!(given));
        } else if let Some(one) = given.first() {
            record.user_config.insert(field.key.clone(), json!(one));
        }
    }
    let places = Places::new(env);
    if scope == Scope::Project && !record.secrets.is_empty() {
        return Err(opened.invalid(format!(
            "user_config.{}: a sensitive value cannot be used in project scope (its file is \
             shared, and a project's entries never read stored secrets); install it in local \
             or user scope",
            record.secrets.join(", user_config.")
        )));
    }
    let mut entry = build_entry(
        &opened, &info, &folder, &values, &sensitive, &record, &places,
    )?;
    // An upgrade keeps what the user set on the entry (`disabled`, timeouts, …).
    if let (Some((old, _)), Some(new)) = (&installed, entry.as_object())
        && let Some(old) = old.raw.as_object()
    {
        let mut merged = old.clone();
        for key in ["type", "command", "args", "env", BUNDLE_KEY] {
            match new.get(key) {
                Some(value) => merged.insert(key.to_owned(), value.clone()),
                None => merged.remove(key),
            };
        }
        entry = Value::Object(merged);
    }
    if !entry_command_found(&entry, env, &paths.cwd) {
        let command = entry["command"].as_str().unwrap_or_default();
        return Err(opened.invalid(format!(
            "manifest.json: server.mcp_config.command: `{command}` is not on PATH"
        )));
    }

    // The entry's file: refuse a name that some other entry has.
    let (path, location, mode) = paths.scope_file(scope);
    let mut edit = ConfigEdit::open(&path, location, mode)?;
    if edit.contains(&server) && installed.is_none() && !options.force {
        return Err(ConfigError::AlreadyExists {
            name: server,
            scope,
            file: edit.path().to_owned(),
        }
        .into());
    }

    // Secrets first: an entry never refers to a value that is not stored. What they replace
    // is kept, to be put back if the install fails after this.
    let mut replaced_secrets: Vec<(String, Option<String>)> = Vec::new();
    let put_back = |replaced: &[(String, Option<String>)]| {
        for (key, before) in replaced {
            let _ = match before {
                Some(value) => store.set(key, value),
                None => store.delete(key),
            };
        }
    };
    for key in &record.secrets {
        if let Some(value) = values.get(key) {
            let key = secret_key(&info.name, key);
            let before = store.get(&key).ok().flatten();
            if let Err(e) = store.set(&key, &value.join(",")) {
                put_back(&replaced_secrets);
                return Err(e.into());
            }
            replaced_secrets.push((key, before));
        }
    }

    // Swap the folders: the old one kept until the entry is written.
    let old = if folder.exists() {
        let moved = tempfile::Builder::new()
            .prefix(".old-")
            .tempdir_in(&bundles)
            .map_err(io(&bundles))
            .and_then(|old| {
                std::fs::rename(&folder, old.path()).map_err(io(&folder))?;
                Ok(old)
            });
        match moved {
            Ok(old) => Some(old),
            Err(e) => {
                put_back(&replaced_secrets);
                return Err(e);
            }
        }
    } else {
        None
    };
    let fresh = fresh.keep();
    let restore = |old: &Option<tempfile::TempDir>| {
        let _ = std::fs::remove_dir_all(&folder);
        if let Some(old) = old {
            let _ = std::fs::rename(old.path(), &folder);
        }
    };
    if let Err(source) = std::fs::rename(&fresh, &folder) {
        let _ = std::fs::remove_dir_all(&fresh);
        restore(&old);
        put_back(&replaced_secrets);
        return Err(BundleError::Io {
            path: folder,
            source,
        });
    }
    let written = edit.set(&server, &entry).and_then(|()| edit.save());
    if let Err(e) = written {
        restore(&old);
        put_back(&replaced_secrets);
        return Err(e.into());
    }
    drop(old);
    // Secrets of fields that are gone, or no longer sensitive.
    if let Some((_, previous)) = &installed {
        for key in &previous.secrets {
            if !record.secrets.contains(key) {
                let _ = store.delete(&secret_key(&previous.name, key));
            }
        }
    }
    Ok(InstalledBundle {
        server,
        scope,
        file: edit.path().to_owned(),
        replaced: installed.map(|(_, r)| r.version),
        secret_store: (!record.secrets.is_empty()).then(|| store.describe()),
        record,
    })
}

/// The `mcpServers` entry: `server.mcp_config` (with this platform's overrides) and every
/// reference replaced but the sensitive values', plus the record.
fn build_entry(
    opened: &Opened,
    info: &BundleInfo,
    folder: &Path,
    values: &BTreeMap<String, Vec<String>>,
    sensitive: &BTreeSet<&str>,
    record: &BundleRecord,
    places: &Places,
) -> Result<Value, BundleError> {
    let server = opened
        .manifest
        .server
        .as_ref()
        .map(|s| &s.0)
        .ok_or_else(|| opened.invalid("manifest.json: server: missing"))?;
    let dir = folder.to_string_lossy().into_owned();
    let mut config = match &server.mcp_config {
        Some(config) => config.0.clone(),
        // A uv server without mcp_config: `uv run` in the bundle's folder.
        None => McpConfig {
            command: Some(manifest::Str("uv".to_owned())),
            args: Some(manifest::Strs(
                [
                    "run",
                    "--directory",
                    "${__dirname}",
                    server
                        .entry_point
                        .as_ref()
                        .map(|e| e.0.as_str())
                        .unwrap_or_default(),
                ]
                .into_iter()
                .map(|s| manifest::Str(s.to_owned()))
                .collect(),
            )),
            ..McpConfig::default()
        },
    };
    if let Some(over) = config.platform_overrides.remove(platform()) {
        let over = over.0;
        if over.command.is_some() {
            config.command = over.command;
        }
        if over.args.is_some() {
            config.args = over.args;
        }
        if let Some(env) = over.env {
            let mut merged = config.env.take().unwrap_or_default();
            merged.0.extend(env.0);
            config.env = Some(merged);
        }
    }
    let known: BTreeSet<&str> = info.user_config.iter().map(|f| f.key.as_str()).collect();
    let mut unknown = None;
    let mut replace = |text: &str| {
        replace_refs(text, |name| {
            if name == "__dirname" {
                return Some(dir.clone());
            }
            if let Some(key) = name.strip_prefix(USER_CONFIG_PREFIX) {
                if !known.contains(key) {
                    unknown.get_or_insert_with(|| key.to_owned());
                    return None;
                }
                if sensitive.contains(key) {
                    return None;
                }
                return Some(values.get(key).map(|v| v.join(",")).unwrap_or_default());
            }
            places.get(name)
        })
    };
    let command = replace(&config.command.map(|c| c.0).unwrap_or_default());
    let mut args = Vec::new();
    for arg in config.args.map(|a| a.0).unwrap_or_default() {
        // `${user_config.KEY}` alone, for a `multiple` field: one argument a value.
        let whole = arg
            .0
            .strip_prefix("${user_config.")
            .and_then(|r| r.strip_suffix('}'));
        match whole {
            Some(key)
                if !sensitive.contains(key)
                    && info.user_config.iter().any(|f| f.key == key && f.multiple) =>
            {
                args.extend(values.get(key).cloned().unwrap_or_default());
            }
            _ => args.push(replace(&arg.0)),
        }
    }
    let env: serde_json::Map<String, Value> = config
        .env
        .map(|e| e.0)
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, Value::String(replace(&v.0))))
        .collect();
    if let Some(key) = unknown {
        return Err(opened.invalid(format!(
            "manifest.json: server.mcp_config: `${{user_config.{key}}}` names no user_config field"
        )));
    }
    let mut entry = json!({"type": "stdio", "command": command});
    if !args.is_empty() {
        entry["args"] = json!(args);
    }
    if !env.is_empty() {
        entry["env"] = Value::Object(env);
    }
    entry[BUNDLE_KEY] = record.to_value();
    Ok(entry)
}

/// Whether the entry's command is a path or found on `PATH`.
fn entry_command_found(entry: &Value, env: &Environment, cwd: &Path) -> bool {
    let Some(command) = entry["command"].as_str() else {
        return false;
    };
    if command.contains('/') || command.contains("${") {
        return true;
    }
    find_program(command, env, cwd).is_some()
}

/// What [`uninstall_bundle`] removed.
#[derive(Debug, Clone)]
pub struct UninstalledBundle {
    pub server: String,
    pub record: BundleRecord,
    pub scope: Scope,
    pub file: PathBuf,
}

/// Removes a bundle's entry (named by the entry or by the manifest's `name`), its unpacked
/// folder and its stored secrets.
pub fn uninstall_bundle(
    set: &ConfigSet,
    env: &Environment,
    name: &str,
    scope: Option<Scope>,
) -> Result<UninstalledBundle, BundleError> {
    let paths = &set.paths;
    let (entry, record) = set
        .servers
        .iter()
        .filter(|e| scope.is_none_or(|s| e.origin.scope == s))
        .find_map(|e| {
            bundle_record(e)
                .filter(|r| e.name == name || r.name == name)
                .map(|r| (e, r))
        })
        .ok_or_else(|| BundleError::NotInstalled {
            name: name.to_owned(),
        })?;
    let scope = entry.origin.scope;
    let (path, location, mode) = paths.scope_file(scope);
    let mut edit = ConfigEdit::open(&path, location, mode)?;
    edit.remove(&entry.name)?;
    edit.save()?;
    let store = SecretStore::from_env(&paths.state_dir, env);
    for key in &record.secrets {
        store.delete(&secret_key(&record.name, key))?;
    }
    // Only a folder Switchboard unpacked.
    if record.path.starts_with(paths.state_dir.join("bundles")) && record.path.exists() {
        std::fs::remove_dir_all(&record.path).map_err(|source| BundleError::Io {
            path: record.path.clone(),
            source,
        })?;
    }
    Ok(UninstalledBundle {
        server: entry.name.clone(),
        record,
        scope,
        file: edit.path().to_owned(),
    })
}
