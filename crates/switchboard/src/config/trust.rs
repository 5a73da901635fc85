//! Trusted projects: a project's own `.switchboard/settings.json` may allow tools and run hooks
//! on the user's machine, so its `allow` rules and hooks apply only once the user trusts that
//! project root (`switchboard mcp trust`). Kept as a list of project keys
//! ([`ConfigPaths::project_key`](super::ConfigPaths::project_key)) in one owner-only file.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::edit::write_atomic;
use super::{ConfigError, ConfigIssue};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct TrustFile {
    version: u32,
    /// Project roots, as their keys.
    projects: BTreeSet<String>,
}

/// The projects the user trusts.
#[derive(Debug, Clone)]
pub struct TrustStore {
    path: PathBuf,
    data: TrustFile,
}

impl TrustStore {
    /// Reads the record; a missing file trusts nothing, and so does one another user could
    /// have written (an error).
    pub fn load(path: &Path) -> Result<TrustStore, ConfigIssue> {
        if let Some((at, why)) = crate::secrets::untrusted_file(path) {
            return Err(ConfigIssue::untrusted(
                &at,
                "the trusted projects are not used, so no project is trusted",
                why,
            ));
        }
        let hint = "fix or delete the file; no project is trusted until then";
        let text = super::json::read_text(path).map_err(|mut issue| {
            issue.message = format!("cannot read the trusted projects: {}", issue.message);
            issue.hint(hint)
        })?;
        let data = match text {
            Some(text) => serde_json::from_str(&text).map_err(|e| {
                let (message, at) = super::json::serde_error(&text, &e);
                ConfigIssue::error(format!("cannot parse the trusted projects: {message}"))
                    .in_file(path)
                    .at(at)
                    .hint(hint)
            })?,
            None => TrustFile {
                version: 1,
                ..TrustFile::default()
            },
        };
        Ok(TrustStore {
            path: path.to_owned(),
            data,
        })
    }

    pub fn is_trusted(&self, project: &str) -> bool {
        self.data.projects.contains(project)
    }

    /// Trusts or stops trusting a project; `false` when that was already so.
    pub fn set(&mut self, project: &str, trusted: bool) -> bool {
        if trusted {
            self.data.projects.insert(project.to_owned())
        } else {
            self.data.projects.remove(project)
        }
    }

    pub fn save(&self) -> Result<(), ConfigError> {
        let mut text = serde_json::to_string_pretty(&self.data).unwrap_or_default();
        text.push('\n');
        write_atomic(&self.path, text.as_bytes(), 0o600).map_err(|source| ConfigError::Write {
            path: self.path.clone(),
            source,
        })
    }
}
