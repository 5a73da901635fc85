//! Problems found in configuration, each naming the file, position, server and field.

use std::fmt;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Warning,
    Error,
}

/// One problem in a configuration file. Displayed as
/// `FILE:LINE:COL: server `NAME`, field `FIELD`: MESSAGE` with an optional `hint:` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigIssue {
    pub severity: Severity,
    pub file: Option<PathBuf>,
    /// 1-based line and column.
    pub position: Option<(usize, usize)>,
    pub server: Option<String>,
    pub field: Option<String>,
    pub message: String,
    pub hint: Option<String>,
    /// The variable, when the problem is only that a `${VAR}` reference is unset.
    pub missing_variable: Option<String>,
}

impl ConfigIssue {
    pub fn error(message: impl Into<String>) -> Self {
        ConfigIssue {
            severity: Severity::Error,
            file: None,
            position: None,
            server: None,
            field: None,
            message: message.into(),
            hint: None,
            missing_variable: None,
        }
    }

    pub fn warning(message: impl Into<String>) -> Self {
        ConfigIssue {
            severity: Severity::Warning,
            ..ConfigIssue::error(message)
        }
    }

    pub fn in_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.file = Some(file.into());
        self
    }

    pub fn at(mut self, position: (usize, usize)) -> Self {
        self.position = Some(position);
        self
    }

    pub fn server(mut self, server: impl Into<String>) -> Self {
        self.server = Some(server.into());
        self
    }

    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// An error for a folder or file of the user's own that another user could have rewritten
    /// (`path`, which `what` says is not used, and why: [`crate::secrets::untrusted`]).
    pub fn untrusted(
        path: &std::path::Path,
        what: &str,
        untrusted: crate::secrets::Untrusted,
    ) -> Self {
        ConfigIssue::error(format!("{what}: it is {}", untrusted.why))
            .in_file(path)
            .hint(untrusted.hint)
    }
}

impl fmt::Display for ConfigIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}", file.display())?;
            if let Some((line, col)) = self.position {
                write!(f, ":{line}:{col}")?;
            }
            f.write_str(": ")?;
        }
        match (&self.server, &self.field) {
            (Some(server), Some(field)) => write!(f, "server `{server}`, field `{field}`: ")?,
            (Some(server), None) => write!(f, "server `{server}`: ")?,
            (None, Some(field)) => write!(f, "field `{field}`: ")?,
            (None, None) => {}
        }
        f.write_str(&self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

/// An operation on configuration that could not be done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The configuration itself is wrong; the issue says where.
    #[error("{0}")]
    Invalid(Box<ConfigIssue>),
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot lock {} for an edit: {source}", path.display())]
    Lock {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("another process has been editing {} for more than {} s; nothing was written\n  hint: run the command again once it is done", path.display(), waited.as_secs())]
    LockTimeout {
        path: PathBuf,
        waited: std::time::Duration,
    },
    #[error("no server named `{name}`{}", in_scope(*.scope))]
    NotFound {
        name: String,
        scope: Option<super::Scope>,
    },
    #[error("server `{name}` already exists in {scope} scope ({})\n  hint: remove it first with `switchboard mcp remove {name} --scope {scope}`", file.display())]
    AlreadyExists {
        name: String,
        scope: super::Scope,
        file: PathBuf,
    },
    /// A plugin or marketplace operation that could not be done (the message says why).
    #[error("{0}")]
    Plugin(String),
    #[error("server `{name}` is defined in several scopes ({}); name one with --scope", scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", "))]
    AmbiguousScope {
        name: String,
        scopes: Vec<super::Scope>,
    },
}

fn in_scope(scope: Option<super::Scope>) -> String {
    scope.map(|s| format!(" in {s} scope")).unwrap_or_default()
}

impl From<ConfigIssue> for ConfigError {
    fn from(issue: ConfigIssue) -> Self {
        ConfigError::Invalid(Box::new(issue))
    }
}

impl std::error::Error for ConfigIssue {}
