//! The settings files of every scope as serde structs, read through [`super::de`] so problems
//! keep their file, line, column and field path. A new setting is one field here.
//!
//! Each file's top-level keys are its struct's fields: a key no field declares is warned about
//! (and kept as written). Sections still read by hand from the AST (`mcpServers`,
//! `permissions`, `hooks`, `policy`, `projects`) are declared as [`Skipped`]: known keys, read
//! elsewhere.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::ConfigIssue;
use super::de::{self, Checked, Read, Skipped, Spanned};
use super::json::Document;

/// Reads a whole settings file into `T`. `Ok(None)` for an empty file; `Err` when it is not
/// JSON or not an object. Problems of [`Checked`] parts are in [`Read::errors`].
pub(crate) fn read_file<T: DeserializeOwned>(
    doc: &Document,
) -> Result<Option<Read<T>>, ConfigIssue> {
    let Some(root) = doc.root_value()? else {
        return Ok(None);
    };
    de::from_ast(&root, "").map(Some).map_err(|e| e.issue(doc))
}

// Keys named `_x` below are known to the file but read elsewhere; being fields, they are not
// reported as unknown.

/// `$XDG_CONFIG_HOME/switchboard/mcp.json`: the user's servers and settings.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UserFile {
    #[serde(rename = "mcpServers", default)]
    _mcp_servers: Skipped,
    #[serde(rename = "permissions", default)]
    _permissions: Skipped,
    #[serde(rename = "hooks", default)]
    _hooks: Skipped,
    /// Only the user's own file may name a sampling command.
    #[serde(default)]
    pub(crate) sampling: Checked<SamplingFile>,
    #[serde(default)]
    pub(crate) roots: Checked<RootsFile>,
    #[serde(rename = "$schema", default)]
    _schema: Skipped,
}

/// A project's `.mcp.json`, and each `--mcp-config`: servers only.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ProjectFile {
    #[serde(rename = "mcpServers", default)]
    _mcp_servers: Skipped,
    #[serde(rename = "$schema", default)]
    _schema: Skipped,
}

/// The local file: each project's private servers under `projects.<root>`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct LocalFile {
    #[serde(rename = "projects", default)]
    _projects: Skipped,
    #[serde(rename = "$schema", default)]
    _schema: Skipped,
}

/// The administrator's managed file.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ManagedFile {
    #[serde(rename = "mcpServers", default)]
    _mcp_servers: Skipped,
    #[serde(rename = "policy", default)]
    _policy: Skipped,
    #[serde(rename = "permissions", default)]
    _permissions: Skipped,
    #[serde(rename = "hooks", default)]
    _hooks: Skipped,
    #[serde(rename = "$schema", default)]
    _schema: Skipped,
}

/// `sampling` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct SamplingFile {
    pub(crate) command: Spanned<String>,
    #[serde(default)]
    pub(crate) args: Vec<String>,
    pub(crate) timeout_ms: Option<u64>,
    #[serde(default)]
    pub(crate) servers: BTreeMap<String, SamplingServerFile>,
}

/// One server's entry of `sampling.servers`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct SamplingServerFile {
    pub(crate) max_tokens: Option<u32>,
}

/// `roots`: folder paths as written (`~/` not yet expanded).
#[derive(Debug)]
pub(crate) struct RootsFile(pub(crate) Vec<String>);

impl<'de> Deserialize<'de> for RootsFile {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<String>::deserialize(d)
            .map(RootsFile)
            .map_err(|_| serde::de::Error::custom("must be a list of folder paths"))
    }
}
