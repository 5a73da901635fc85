//! Where each scope's file lives.

use std::path::{Path, PathBuf};

use super::Environment;
use crate::env_vars::EnvVars;

/// The files configuration is read from and written to, for one working directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigPaths {
    /// The working directory (absolute).
    pub cwd: PathBuf,
    /// The repository root above `cwd` (the nearest folder holding `.git`), else `cwd`. Local
    /// entries and approvals are keyed by it.
    pub project_root: PathBuf,
    /// Every `.mcp.json` from `cwd` up to `project_root`, nearest first.
    pub project_files: Vec<PathBuf>,
    /// `$SWITCHBOARD_CONFIG_DIR`, else `$XDG_CONFIG_HOME/switchboard`, else `~/.config/switchboard`.
    pub config_dir: PathBuf,
    /// `$SWITCHBOARD_STATE_DIR`, else `$XDG_STATE_HOME/switchboard`, else `~/.local/state/switchboard`.
    pub state_dir: PathBuf,
    /// The administrator's file: `$SWITCHBOARD_MANAGED_CONFIG`, else a system path.
    pub managed_file: PathBuf,
    /// `--mcp-config` arguments: file paths, or inline JSON objects.
    pub dynamic: Vec<String>,
}

impl ConfigPaths {
    pub fn discover(cwd: &Path, env: &Environment) -> ConfigPaths {
        let cwd = std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_owned());
        let project_root = cwd
            .ancestors()
            .find(|dir| dir.join(".git").exists())
            .unwrap_or(&cwd)
            .to_owned();
        let project_files = cwd
            .ancestors()
            .take_while(|dir| dir.starts_with(&project_root))
            .map(|dir| dir.join(".mcp.json"))
            .filter(|file| file.is_file())
            .collect();
        let home = env
            .path(EnvVars::HOME)
            .unwrap_or_else(|| PathBuf::from("/"));
        let config_dir = env
            .path(EnvVars::SWITCHBOARD_CONFIG_DIR)
            .unwrap_or_else(|| {
                env.path(EnvVars::XDG_CONFIG_HOME)
                    .unwrap_or_else(|| home.join(".config"))
                    .join("switchboard")
            });
        let state_dir = env.path(EnvVars::SWITCHBOARD_STATE_DIR).unwrap_or_else(|| {
            env.path(EnvVars::XDG_STATE_HOME)
                .unwrap_or_else(|| home.join(".local/state"))
                .join("switchboard")
        });
        let managed_file = env
            .path(EnvVars::SWITCHBOARD_MANAGED_CONFIG)
            .unwrap_or_else(default_managed_file);
        ConfigPaths {
            cwd,
            project_root,
            project_files,
            config_dir,
            state_dir,
            managed_file,
            dynamic: Vec::new(),
        }
    }

    /// The user scope's file.
    pub fn user_file(&self) -> PathBuf {
        self.config_dir.join("mcp.json")
    }

    /// The file holding every project's local-scope entries, keyed by project root.
    pub fn local_file(&self) -> PathBuf {
        self.config_dir.join("local.json")
    }

    /// The project's own settings (permissions and hooks): `.switchboard/settings.json` at the
    /// project root.
    pub fn project_settings_file(&self) -> PathBuf {
        self.project_root.join(".switchboard").join("settings.json")
    }

    /// The project-approval record.
    pub fn approvals_file(&self) -> PathBuf {
        self.state_dir.join("approvals.json")
    }

    /// The projects whose own settings (`.switchboard/settings.json`) the user trusts.
    pub fn trusted_projects_file(&self) -> PathBuf {
        self.state_dir.join("trusted-projects.json")
    }

    /// Where `--scope project` writes: the nearest existing `.mcp.json`, else one at the root.
    pub fn project_file(&self) -> PathBuf {
        self.project_files
            .first()
            .cloned()
            .unwrap_or_else(|| self.project_root.join(".mcp.json"))
    }

    /// The file a writable scope lives in, where its entries sit, and a new file's mode
    /// (the project's may be shared; the others are the user's own).
    pub fn scope_file(&self, scope: super::Scope) -> (PathBuf, super::ServersLocation, u32) {
        match scope {
            super::Scope::Project => (self.project_file(), super::ServersLocation::TopLevel, 0o644),
            super::Scope::Local => (
                self.local_file(),
                super::ServersLocation::Project(self.project_key()),
                0o600,
            ),
            _ => (self.user_file(), super::ServersLocation::TopLevel, 0o600),
        }
    }

    /// The key of this project in the local file and the approval record.
    pub fn project_key(&self) -> String {
        self.project_root.to_string_lossy().into_owned()
    }
}

fn default_managed_file() -> PathBuf {
    if cfg!(target_os = "macos") {
        PathBuf::from("/Library/Application Support/Switchboard/managed.json")
    } else {
        PathBuf::from("/etc/switchboard/managed.json")
    }
}
