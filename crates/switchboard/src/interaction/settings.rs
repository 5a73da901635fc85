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

use crate::config::settings::Checked;
use crate::config::{ConfigIssue, ConfigPaths, ConfigSet, Environment, Scope, expand_vars};
use crate::env_vars::EnvVars;

/// How long a sampling command may run when `timeoutMs` is not set.
pub const DEFAULT_SAMPLING_TIMEOUT: Duration = Duration::from_secs(120);

/// Where sampling requests go: a command, for the servers allowed to ask.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingSettings {
    /// The program to run (`sampling.command`, `${VAR}` expanded); a bare name is looked up
    /// on `PATH`.
    pub command: String,
    /// Its arguments (`sampling.args`, `${VAR}` expanded; one naming an unset variable is
    /// passed as written).
    pub args: Vec<String>,
    /// How long the command has to answer one request (`sampling.timeoutMs`;
    /// [`DEFAULT_SAMPLING_TIMEOUT`] when unset). Past it, the command is killed and the
    /// request fails.
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
    /// Where sampling requests go (`sampling`); `None` when the user file sets none, or its
    /// `sampling` cannot be used (the issues say why), and then no server can sample.
    pub sampling: Option<SamplingSettings>,
    /// Extra roots, besides the working directory (`~` expands to the home folder).
    pub roots: Vec<PathBuf>,
}

impl InteractionSettings {
    /// Reads `sampling` and `roots` from the user file. A broken value is an issue naming the
    /// file, position and field; the rest still loads. With a [`ConfigSet`] at hand,
    /// [`InteractionSettings::from_config`] builds the same without reading any file again.
    pub fn load(paths: &ConfigPaths, env: &Environment) -> (InteractionSettings, Vec<ConfigIssue>) {
        Self::from_config(&ConfigSet::load(paths.clone(), env), env)
    }

    /// The interaction settings of the user file as `config` read it.
    pub fn from_config(
        config: &ConfigSet,
        env: &Environment,
    ) -> (InteractionSettings, Vec<ConfigIssue>) {
        let mut settings = InteractionSettings::default();
        let Some(user) = config.settings(Scope::User) else {
            return (settings, Vec::new());
        };
        if let Some(issue) = &user.broken {
            return (settings, vec![issue.clone()]);
        }
        let file = &user.file;
        let mut issues: Vec<ConfigIssue> = user
            .errors
            .iter()
            .filter(|e| {
                let top = e.field().split(['.', '[']).next().unwrap_or_default();
                top == "sampling" || top == "roots"
            })
            .map(|e| {
                let issue = e.issue(file);
                if e.field() != "sampling" {
                    return issue;
                }
                ConfigIssue {
                    message: format!(
                        "{}; expected {{\"command\": \"...\", \"args\": [...], \"timeoutMs\": N, \"servers\": {{\"NAME\": {{\"maxTokens\": N}}}}}}",
                        issue.message
                    ),
                    ..issue
                }
            })
            .collect();
        if let Checked::Ok(raw) = &user.sections.sampling {
            let command = &raw.command;
            let issue = |message: String| {
                ConfigIssue::error(message)
                    .in_file(file)
                    .at(command.at)
                    .field("sampling.command")
            };
            match expand_vars(&command.value, env) {
                Ok(_) if command.value.trim().is_empty() => {
                    issues.push(issue("is empty".to_owned()));
                }
                Ok(expanded) => {
                    settings.sampling = Some(SamplingSettings {
                        command: expanded,
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
                            .iter()
                            .map(|(name, s)| {
                                (
                                    name.clone(),
                                    ServerSampling {
                                        max_tokens: s.max_tokens,
                                    },
                                )
                            })
                            .collect(),
                        file: file.clone(),
                    });
                }
                Err(e) => issues.push(issue(e.to_string())),
            }
        }
        if let Checked::Ok(dirs) = &user.sections.roots {
            let home = env.path(EnvVars::HOME);
            settings.roots = dirs
                .0
                .iter()
                .map(|d| match (d.strip_prefix("~/"), &home) {
                    (Some(rest), Some(home)) => home.join(rest),
                    _ => PathBuf::from(d),
                })
                .collect();
        }
        issues.sort_by_key(|issue| issue.position);
        (settings, issues)
    }
}
