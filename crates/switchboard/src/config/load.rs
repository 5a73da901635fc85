//! Reading every scope and merging it into one [`ConfigSet`].

use std::collections::BTreeMap;
use std::path::PathBuf;

use jsonc_parser::ast;

use super::approval::{Approval, ApprovalStore};
use serde::de::DeserializeOwned;

use super::de;
use super::json::{Document, get, kind_name, prop_name, range_of};
use super::parse::{ParsedEntry, parse_entry};
use super::settings::{LocalFile, ManagedFile, ProjectFile, UserFile};
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
}

impl ConfigSet {
    /// Reads every scope. Never fails as a whole: a broken file or entry becomes an issue and
    /// the rest still loads.
    pub fn load(paths: ConfigPaths, env: &Environment) -> ConfigSet {
        let mut loader = Loader {
            env,
            issues: Vec::new(),
            merged: BTreeMap::new(),
        };

        // The managed file is read first for its policy; its entries merge last, so they win.
        let mut policy = Policy::default();
        let managed = match Document::read(&paths.managed_file) {
            Ok(doc) => doc,
            Err(issue) => {
                loader.issues.push(issue);
                policy = Policy::fail_closed();
                None
            }
        };
        let managed_parses = match managed.as_ref().map(Document::root_object) {
            None => false,
            Some(Err(issue)) => {
                loader.issues.push(issue);
                policy = Policy::fail_closed();
                false
            }
            Some(Ok(root)) => {
                if let (Some(doc), Some(p)) =
                    (&managed, root.as_ref().and_then(|r| get(r, "policy")))
                {
                    policy = Policy::parse(doc, &p.value).unwrap_or_else(|issue| {
                        loader.issues.push(issue);
                        Policy::fail_closed()
                    });
                }
                true
            }
        };

        loader.read_file::<UserFile>(&paths.user_file(), Scope::User, &[]);
        for file in paths.project_files.iter().rev() {
            loader.read_file::<ProjectFile>(file, Scope::Project, &[]);
        }
        let key = paths.project_key();
        loader.read_file::<LocalFile>(&paths.local_file(), Scope::Local, &["projects", &key]);
        for spec in &paths.dynamic {
            match load_dynamic_text(spec, &paths.cwd) {
                Ok(doc) => loader.read_doc::<ProjectFile>(&doc, Scope::Dynamic, &[]),
                Err(issue) => loader.issues.push(issue),
            }
        }
        if let (Some(doc), true) = (&managed, managed_parses) {
            loader.read_doc::<ManagedFile>(doc, Scope::Managed, &[]);
        }

        let approvals = match ApprovalStore::load(&paths.approvals_file()) {
            Ok(store) => Some(store),
            Err(issue) => {
                loader.issues.push(issue);
                None
            }
        };
        let servers = loader
            .merged
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
        ConfigSet {
            paths,
            servers,
            issues: loader.issues,
            policy,
        }
    }

    pub fn get(&self, name: &str) -> Option<&ServerEntry> {
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

struct Loader<'e> {
    env: &'e Environment,
    issues: Vec<ConfigIssue>,
    merged: BTreeMap<String, ServerEntry>,
}

impl Loader<'_> {
    fn read_file<F: DeserializeOwned>(
        &mut self,
        path: &std::path::Path,
        scope: Scope,
        nest: &[&str],
    ) {
        match Document::read(path) {
            Err(issue) => self.issues.push(issue),
            Ok(None) => {}
            Ok(Some(doc)) => self.read_doc::<F>(&doc, scope, nest),
        }
    }

    /// Reads the `mcpServers` object of a document, found under the `nest` keys
    /// (`projects/<root>` in the local file). `F`, the file's struct, says which top-level
    /// keys it knows; others are warned about.
    fn read_doc<F: DeserializeOwned>(&mut self, doc: &Document, scope: Scope, nest: &[&str]) {
        let root = match doc.root_value() {
            Ok(Some(root)) => root,
            Ok(None) => return,
            Err(issue) => return self.issues.push(issue),
        };
        // The sections' own problems are reported by the modules that read them.
        match de::from_ast::<F>(&root, "") {
            Ok(file) => {
                for unknown in file.unknown.iter().filter(|u| u.field == u.key) {
                    self.issues.push(
                        ConfigIssue::warning("unknown field; kept as written and ignored")
                            .in_file(&doc.path)
                            .at(doc.position(unknown.offset))
                            .field(unknown.key.clone()),
                    );
                }
            }
            Err(e) => self.issues.push(e.issue(doc)),
        }
        let ast::Value::Object(root) = root else {
            return;
        };
        let mut obj = &root;
        let mut path = String::new();
        for key in nest {
            path.push_str(if path.is_empty() { "" } else { "." });
            path.push_str(key);
            match get(obj, key).map(|p| &p.value) {
                None => return,
                Some(ast::Value::Object(inner)) => obj = inner,
                Some(other) => {
                    return self.issues.push(self.not_object(doc, other, &path));
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
        for prop in &servers.properties {
            let name = prop_name(prop);
            let origin = Origin {
                scope,
                file: Some(doc.path.clone()),
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
                self.env,
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
            };
            if let Some(previous) = self.merged.remove(name) {
                entry.shadowed.push(previous.origin);
                entry.shadowed.extend(previous.shadowed);
            }
            self.merged.insert(name.to_owned(), entry);
        }
    }

    fn not_object(&self, doc: &Document, value: &ast::Value<'_>, field: &str) -> ConfigIssue {
        ConfigIssue::error(format!("expected an object, found {}", kind_name(value)))
            .in_file(&doc.path)
            .at(doc.position(range_of(value).start))
            .field(field)
    }
}
