//! A throw-away home directory, project and managed file, so tests exercise real
//! configuration discovery without touching the machine's own files.

use std::path::{Path, PathBuf};

/// A temporary tree: `home/` (with XDG folders), `project/` (a repository root with `.git`),
/// and `managed.json` for the administrator's file.
#[derive(Debug)]
pub struct ConfigTree {
    dir: tempfile::TempDir,
}

impl ConfigTree {
    pub fn new() -> std::io::Result<ConfigTree> {
        let dir = tempfile::Builder::new()
            .prefix("switchboard-test-")
            .tempdir()?;
        std::fs::create_dir_all(dir.path().join("home"))?;
        std::fs::create_dir_all(dir.path().join("project/.git"))?;
        Ok(ConfigTree { dir })
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn home(&self) -> PathBuf {
        self.root().join("home")
    }

    /// The repository root (it holds `.git`).
    pub fn project(&self) -> PathBuf {
        self.root().join("project")
    }

    /// `$XDG_CONFIG_HOME/switchboard`.
    pub fn config_dir(&self) -> PathBuf {
        self.home().join(".config/switchboard")
    }

    /// `$XDG_STATE_HOME/switchboard`.
    pub fn state_dir(&self) -> PathBuf {
        self.home().join(".local/state/switchboard")
    }

    pub fn user_file(&self) -> PathBuf {
        self.config_dir().join("mcp.json")
    }

    pub fn local_file(&self) -> PathBuf {
        self.config_dir().join("local.json")
    }

    pub fn project_file(&self) -> PathBuf {
        self.project().join(".mcp.json")
    }

    pub fn managed_file(&self) -> PathBuf {
        self.root().join("managed.json")
    }

    /// Writes a file (relative paths are under the tree's root), creating its folders.
    pub fn write(&self, path: impl AsRef<Path>, text: &str) -> std::io::Result<PathBuf> {
        let path = self.root().join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, text)?;
        Ok(path)
    }

    /// The environment that points Switchboard at this tree and nothing else.
    pub fn env(&self) -> Vec<(String, String)> {
        let home = self.home();
        vec![
            ("HOME".into(), home.display().to_string()),
            (
                "XDG_CONFIG_HOME".into(),
                home.join(".config").display().to_string(),
            ),
            (
                "XDG_STATE_HOME".into(),
                home.join(".local/state").display().to_string(),
            ),
            (
                "SWITCHBOARD_MANAGED_CONFIG".into(),
                self.managed_file().display().to_string(),
            ),
            ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
        ]
    }

    /// Replaces the tree's random location with `[TMP]`, so messages can be snapshotted.
    pub fn redact(&self, text: &str) -> String {
        text.replace(&self.root().display().to_string(), "[TMP]")
    }
}
