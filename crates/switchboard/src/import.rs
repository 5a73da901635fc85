//! Import MCP server definitions from other hosts' configuration files.
//!
//! Each supported host ([`ImportHost`]) keeps its servers in its own file and
//! format. [`import_from`] reads one such file and turns every server it can
//! express into an entry of Switchboard's own `mcpServers` format, with notes
//! about what changed on the way and warnings about what was left behind.
//!
//! Nothing here expands environment variables: references are rewritten to
//! Switchboard's `${VAR}` form and expanded later, when a server starts.

mod entry;
mod hosts;
mod names;
mod parse;
mod vars;

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::Environment;
use crate::env_vars::EnvVars;

/// A host whose MCP server configuration can be imported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ImportHost {
    /// Claude Desktop: `claude_desktop_config.json`.
    ClaudeDesktop,
    /// Claude Code: `~/.claude.json`, user scope and the local scope of one project.
    ClaudeCode,
    /// Cursor: `~/.cursor/mcp.json`.
    Cursor,
    /// VS Code: `<project>/.vscode/mcp.json` (JSON with comments).
    VsCode,
    /// Codex: `~/.codex/config.toml`.
    Codex,
}

impl ImportHost {
    /// Every host, in the order they are listed to users.
    pub const ALL: [ImportHost; 5] = [
        ImportHost::ClaudeDesktop,
        ImportHost::ClaudeCode,
        ImportHost::Cursor,
        ImportHost::VsCode,
        ImportHost::Codex,
    ];

    /// Parses a host id as given on the command line (`claude-desktop`,
    /// `claude-code`, `cursor`, `vscode`, `codex`).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|host| host.id() == s)
    }

    /// The host's id, as accepted by [`ImportHost::parse`].
    pub fn id(&self) -> &'static str {
        match self {
            ImportHost::ClaudeDesktop => "claude-desktop",
            ImportHost::ClaudeCode => "claude-code",
            ImportHost::Cursor => "cursor",
            ImportHost::VsCode => "vscode",
            ImportHost::Codex => "codex",
        }
    }

    /// The host's name for people, e.g. `Claude Desktop`.
    pub fn display_name(&self) -> &'static str {
        match self {
            ImportHost::ClaudeDesktop => "Claude Desktop",
            ImportHost::ClaudeCode => "Claude Code",
            ImportHost::Cursor => "Cursor",
            ImportHost::VsCode => "VS Code",
            ImportHost::Codex => "Codex",
        }
    }

    /// Where the host keeps its configuration by default.
    ///
    /// Claude Desktop's file is under `~/Library/Application Support/Claude`
    /// on macOS and under `config_home/Claude` elsewhere (on Windows the
    /// caller sets `config_home` to `%APPDATA%`). Codex honours `CODEX_HOME`,
    /// which this does not read: a caller that wants it passes its own path
    /// to [`import_from`].
    pub fn default_path(&self, loc: &ImportLocations) -> PathBuf {
        match self {
            ImportHost::ClaudeDesktop => {
                let dir = if cfg!(target_os = "macos") {
                    loc.home.join("Library").join("Application Support")
                } else {
                    loc.config_home.clone()
                };
                dir.join("Claude").join("claude_desktop_config.json")
            }
            ImportHost::ClaudeCode => loc.home.join(".claude.json"),
            ImportHost::Cursor => loc.home.join(".cursor").join("mcp.json"),
            ImportHost::VsCode => loc.project_dir.join(".vscode").join("mcp.json"),
            ImportHost::Codex => loc.home.join(".codex").join("config.toml"),
        }
    }
}

impl fmt::Display for ImportHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.display_name())
    }
}

/// The directories that default paths and path variables are resolved against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportLocations {
    /// The user's home directory.
    pub home: PathBuf,
    /// `$XDG_CONFIG_HOME`, or `~/.config` when it is unset (`%APPDATA%` on Windows).
    pub config_home: PathBuf,
    /// The project being worked on (VS Code's workspace folder, Claude Code's project key).
    pub project_dir: PathBuf,
}

impl ImportLocations {
    /// Locations from this process's environment, or `None` when the home
    /// directory cannot be found.
    pub fn from_env(project_dir: PathBuf) -> Option<Self> {
        let env = Environment::capture();
        let home = home_dir(&env)?;
        let var = if cfg!(windows) {
            EnvVars::APPDATA
        } else {
            EnvVars::XDG_CONFIG_HOME
        };
        let config_home = env
            .path(var)
            .filter(|dir| dir.is_absolute())
            .unwrap_or_else(|| home.join(".config"));
        Some(Self {
            home,
            config_home,
            project_dir,
        })
    }
}

/// One server converted to Switchboard's format.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedServer {
    /// The server's name in Switchboard (sanitized and made unique).
    pub name: String,
    /// The `mcpServers` entry, with `type` always written.
    pub entry: serde_json::Map<String, Value>,
    /// The file it came from.
    pub source: PathBuf,
    /// What changed on the way, and what the user may have to do.
    pub notes: Vec<String>,
    /// The host kept it for this project only (Claude Code's local scope of the project):
    /// it belongs in the local scope of the same project, not the user's.
    pub per_project: bool,
}

/// What one import produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportReport {
    /// The converted servers, in the order of the source file.
    pub servers: Vec<ImportedServer>,
    /// Servers skipped and settings left behind, each naming its server.
    pub warnings: Vec<String>,
}

/// Why a configuration file could not be imported at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The file does not exist.
    #[error("no {host} configuration at {}", path.display())]
    NotFound {
        /// The host whose file was looked for.
        host: ImportHost,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// The file exists but could not be read (permissions, not UTF-8, a directory…).
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid JSON(C) or TOML.
    #[error("syntax error in {} at line {line}, column {column}: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// The file parses but is not shaped like the host's configuration.
    #[error("{} is not a {host} configuration: {message}", path.display())]
    Format {
        /// The host whose format was expected.
        host: ImportHost,
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// Imports the servers of `host`'s configuration at `path`.
///
/// `project_dir` selects Claude Code's project entry and is what VS Code's
/// `${workspaceFolder}` becomes; `${userHome}` becomes the home directory of
/// this process's environment. Use [`import_with`] to give both explicitly.
pub fn import_from(
    host: ImportHost,
    path: &Path,
    project_dir: &Path,
) -> Result<ImportReport, ImportError> {
    let home = home_dir(&Environment::capture());
    hosts::import(host, path, project_dir, home.as_deref())
}

/// The home directory `env` names (`USERPROFILE` on Windows, else `HOME`), when set and
/// not empty.
fn home_dir(env: &Environment) -> Option<PathBuf> {
    env.path(if cfg!(windows) {
        EnvVars::USERPROFILE
    } else {
        EnvVars::HOME
    })
}

/// Like [`import_from`], with the home directory and project taken from `loc`.
pub fn import_with(
    host: ImportHost,
    path: &Path,
    loc: &ImportLocations,
) -> Result<ImportReport, ImportError> {
    hosts::import(host, path, &loc.project_dir, Some(&loc.home))
}
