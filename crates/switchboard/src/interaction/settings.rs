//! The user's interaction settings: top-level `sampling` and `roots` in the user file
//! (`$XDG_CONFIG_HOME/switchboard/mcp.json`), next to `mcpServers` and `permissions`.
//!
//! ```json
//! {
//!   "sampling": {
//!     "command": "my-model", "args": ["--json"], "timeoutMs": 120000,
//!     "servers": {"everything": {"maxTokens": 500}, "search": {}}
//!   },
//!   "roots": ["~/notes", "/srv/data"]
//! }
//! ```
//!
//! Only the user's own file may name a sampling command: it runs with the user's rights and
//! sees what servers send, so a repository's `.mcp.json` cannot set it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::config::json::{Document, get, range_of, to_json};
use crate::config::{ConfigIssue, ConfigPaths, Environment, expand_vars};
use crate::env_vars::EnvVars;

/// How long a sampling command may run when `timeoutMs` is not set.
pub const DEFAULT_SAMPLING_TIMEOUT: Duration = Duration::from_secs(120);

/// Where sampling requests go: a command, for the servers allowed to ask.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingSettings {
    pub command: String,
    pub args: Vec<String>,
    pub timeout: Duration,
    /// The servers allowed to sample (the allow-list), each with its token cap.
    pub servers: BTreeMap<String, ServerSampling>,
    /// The file the settings came from, for messages.
    pub file: PathBuf,
}

/// One server's sampling allowance.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerSampling {
    /// Requests asking for more are capped to this.
    pub max_tokens: Option<u32>,
}

/// The interaction settings of the user file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InteractionSettings {
    pub sampling: Option<SamplingSettings>,
    /// Extra roots, besides the working directory (`~` expands to the home folder).
    pub roots: Vec<PathBuf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawSampling {
    command: String,
    #[serde(default)]
    args: Vec<String>,
    timeout_ms: Option<u64>,
    #[serde(default)]
    servers: BTreeMap<String, RawServer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawServer {
    max_tokens: Option<u32>,
}

impl InteractionSettings {
    /// Reads `sampling` and `roots` from the user file. A broken value is an issue naming the
    /// file, position and field; the rest still loads.
    pub fn load(paths: &ConfigPaths, env: &Environment) -> (InteractionSettings, Vec<ConfigIssue>) {
        let mut settings = InteractionSettings::default();
        let mut issues = Vec::new();
        let file = paths.user_file();
        let doc = match Document::read(&file) {
            Ok(Some(doc)) => doc,
            Ok(None) => return (settings, issues),
            Err(issue) => return (settings, vec![issue]),
        };
        let root = match doc.root_object() {
            Ok(Some(root)) => root,
            Ok(None) => return (settings, issues),
            Err(issue) => return (settings, vec![issue]),
        };
        let issue = |field: &str, at: usize, message: String| {
            ConfigIssue::error(message)
                .in_file(&doc.path)
                .at(doc.position(at))
                .field(field)
        };
        if let Some(prop) = get(&root, "sampling") {
            let at = range_of(&prop.value).start;
            match serde_json::from_value::<RawSampling>(to_json(&prop.value)) {
                Ok(raw) if raw.command.trim().is_empty() => {
                    issues.push(issue("sampling.command", at, "is empty".to_owned()));
                }
                Ok(raw) => match expand_vars(&raw.command, env) {
                    Ok(command) => {
                        settings.sampling = Some(SamplingSettings {
                            command,
                            args: raw
                                .args
                                .iter()
                                .map(|a| expand_vars(a, env).unwrap_or_else(|_| a.clone()))
                                .collect(),
                            timeout: raw
                                .timeout_ms
                                .map(Duration::from_millis)
                                .unwrap_or(DEFAULT_SAMPLING_TIMEOUT),
                            servers: raw
                                .servers
                                .into_iter()
                                .map(|(name, s)| {
                                    (
                                        name,
                                        ServerSampling {
                                            max_tokens: s.max_tokens,
                                        },
                                    )
                                })
                                .collect(),
                            file: doc.path.clone(),
                        });
                    }
                    Err(e) => issues.push(issue("sampling.command", at, e.to_string())),
                },
                Err(e) => issues.push(issue(
                    "sampling",
                    at,
                    format!(
                        "{e}; expected {{\"command\": \"...\", \"args\": [...], \"timeoutMs\": N, \"servers\": {{\"NAME\": {{\"maxTokens\": N}}}}}}"
                    ),
                )),
            }
        }
        if let Some(prop) = get(&root, "roots") {
            let at = range_of(&prop.value).start;
            match serde_json::from_value::<Vec<String>>(to_json(&prop.value)) {
                Ok(dirs) => {
                    let home = env.path(EnvVars::HOME);
                    settings.roots = dirs
                        .into_iter()
                        .map(|d| match (d.strip_prefix("~/"), &home) {
                            (Some(rest), Some(home)) => home.join(rest),
                            _ => PathBuf::from(d),
                        })
                        .collect();
                }
                Err(_) => issues.push(issue(
                    "roots",
                    at,
                    "must be a list of folder paths".to_owned(),
                )),
            }
        }
        (settings, issues)
    }
}
