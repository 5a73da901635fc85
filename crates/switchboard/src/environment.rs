//! A snapshot of environment variables (and the working directory), so configuration can be
//! loaded against a chosen environment (tests, an embedding program) instead of the process's
//! own. The library reads the process's environment nowhere else (clippy's
//! `disallowed-methods` in `crates/switchboard/clippy.toml` keeps it so).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Environment variables by name (see [`EnvVars`](crate::env_vars::EnvVars) for the ones
/// Switchboard reads), and the working directory relative paths start from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    vars: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
}

impl Environment {
    /// The current process's environment (variables that are not valid UTF-8 are left out)
    /// and working directory.
    // The one place the library reads the process's environment: everything else takes an
    // `Environment`, so a program can give the host another one.
    #[allow(clippy::disallowed_methods)]
    pub fn capture() -> Self {
        Environment {
            vars: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
            cwd: std::env::current_dir().ok(),
        }
    }

    /// The working directory: the process's for [`capture`](Self::capture), else the one
    /// [`set_current_dir`](Self::set_current_dir) gave, else none.
    pub fn current_dir(&self) -> Option<&Path> {
        self.cwd.as_deref()
    }

    /// Sets the working directory (it is not checked).
    pub fn set_current_dir(&mut self, dir: impl Into<PathBuf>) {
        self.cwd = Some(dir.into());
    }

    /// A variable's value, when it is set.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// A variable's value as a path, when set and non-empty.
    pub fn path(&self, name: &str) -> Option<PathBuf> {
        self.get(name).filter(|v| !v.is_empty()).map(PathBuf::from)
    }

    /// Sets a variable.
    pub fn set(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.vars.insert(name.into(), value.into());
    }

    /// Unsets a variable.
    pub fn remove(&mut self, name: &str) {
        self.vars.remove(name);
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Environment {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Environment {
            vars: iter
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            cwd: None,
        }
    }
}
