//! Project approvals: servers from a repository's `.mcp.json` run nothing until the user
//! approves them. An approval is bound to the entry's hash, so an edited entry asks again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::edit::write_atomic;
use super::lock::FileLock;
use super::{ConfigError, ConfigHash, ConfigIssue};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Approved,
    Rejected,
}

/// The approval state of one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    /// Not a project entry: no approval needed.
    NotRequired,
    /// Never decided.
    Pending,
    Approved,
    Rejected,
    /// Approved once, but the entry changed since.
    Changed,
}

impl Approval {
    pub fn allows_start(self) -> bool {
        matches!(self, Approval::NotRequired | Approval::Approved)
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct ApprovalFile {
    version: u32,
    /// Project root → server name → record.
    projects: BTreeMap<String, BTreeMap<String, Record>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    decision: Decision,
    hash: String,
}

/// The record of approvals, one file for every project.
#[derive(Debug, Clone)]
pub struct ApprovalStore {
    path: PathBuf,
    data: ApprovalFile,
}

impl ApprovalStore {
    /// Reads the record; a missing file is an empty record. A record another user could have
    /// written (its folder or itself theirs, or writable by others) is an error, never
    /// approvals: whoever loads it approves nothing.
    pub fn load(path: &Path) -> Result<ApprovalStore, ConfigIssue> {
        if let Some((at, why)) = crate::secrets::untrusted_file(path) {
            return Err(ConfigIssue::untrusted(
                &at,
                "the approval record is not used, so no project server is approved",
                why,
            ));
        }
        let hint = "fix or delete the file; project servers will ask for approval again";
        let text = super::json::read_text(path).map_err(|mut issue| {
            issue.message = format!("cannot read the approval record: {}", issue.message);
            issue.hint(hint)
        })?;
        let data = match text {
            Some(text) => serde_json::from_str(&text).map_err(|e| {
                let (message, at) = super::json::serde_error(&text, &e);
                ConfigIssue::error(format!("cannot parse the approval record: {message}"))
                    .in_file(path)
                    .at(at)
                    .hint(hint)
            })?,
            None => ApprovalFile {
                version: 1,
                ..Default::default()
            },
        };
        Ok(ApprovalStore {
            path: path.to_owned(),
            data,
        })
    }

    /// Changes the record at `path` as one step against other processes: locks it, reads it
    /// afresh, applies `change` and writes it back (30 s at most waiting for another's change).
    pub fn update<T>(
        path: &Path,
        change: impl FnOnce(&mut ApprovalStore) -> T,
    ) -> Result<T, ConfigError> {
        let _lock = FileLock::acquire(path)?;
        let mut store = ApprovalStore::load(path)?;
        let out = change(&mut store);
        store.save()?;
        Ok(out)
    }

    /// The state of one entry. A rejection holds whatever the entry becomes: an edit to a
    /// rejected entry does not make it pending again (nor approvable by `approve --all`), only
    /// an approval that names it lifts it.
    pub fn approval(&self, project: &str, name: &str, hash: &ConfigHash) -> Approval {
        match self.data.projects.get(project).and_then(|p| p.get(name)) {
            None => Approval::Pending,
            Some(r) if r.decision == Decision::Rejected => Approval::Rejected,
            Some(r) if r.hash != hash.0 => Approval::Changed,
            Some(_) => Approval::Approved,
        }
    }

    pub fn record(&mut self, project: &str, name: &str, hash: &ConfigHash, decision: Decision) {
        self.data
            .projects
            .entry(project.to_owned())
            .or_default()
            .insert(
                name.to_owned(),
                Record {
                    decision,
                    hash: hash.0.clone(),
                },
            );
    }

    /// Writes the record; only under the lock ([`Self::update`]), so no change is lost.
    fn save(&self) -> Result<(), ConfigError> {
        let mut text = serde_json::to_string_pretty(&self.data).unwrap_or_default();
        text.push('\n');
        write_atomic(&self.path, text.as_bytes(), 0o600).map_err(|source| ConfigError::Write {
            path: self.path.clone(),
            source,
        })
    }
}

impl super::ConfigSet {
    /// Records `decision` for this project's entries named in `names` (in the approvals file,
    /// each under its approval hash, so a changed entry asks again); the names recorded come
    /// back. What `mcp approve`/`reject`, the console and [`crate::Host`] all call.
    pub fn decide_project(
        &self,
        names: &[String],
        decision: Decision,
    ) -> Result<Vec<String>, ConfigError> {
        let paths = &self.paths;
        ApprovalStore::update(&paths.approvals_file(), |store| {
            let mut decided = Vec::new();
            for entry in self
                .servers
                .iter()
                .filter(|e| e.origin.scope == super::Scope::Project && names.contains(&e.name))
            {
                store.record(
                    &paths.project_key(),
                    &entry.name,
                    &entry.approval_hash(),
                    decision,
                );
                decided.push(entry.name.clone());
            }
            decided
        })
    }
}
