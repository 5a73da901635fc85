//! Server names: they become the prefix of every tool name (`mcp__<server>__<tool>`), so they
//! must survive that and parse back unambiguously.

use std::fmt;

/// The longest server name accepted: leaves room for `mcp__`, `__` and a tool name within the
/// 64 characters model APIs accept.
pub const MAX_SERVER_NAME: usize = 40;

/// A checked server name: `[A-Za-z0-9][A-Za-z0-9_-]*`, no `__`, not ending in `_`, at most
/// 40 characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServerName(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("server name `{name}` cannot become a tool prefix: {reason}")]
pub struct NameError {
    pub name: String,
    pub reason: &'static str,
    /// A name that would be accepted, when one can be made.
    pub suggestion: Option<String>,
}

impl ServerName {
    pub fn new(name: &str) -> Result<Self, NameError> {
        let reason = if name.is_empty() {
            Some("it is empty")
        } else if name.len() > MAX_SERVER_NAME {
            Some("it is longer than 40 characters")
        } else if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            Some("use only letters, digits, `-` and `_`")
        } else if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
            Some("it must start with a letter or digit")
        } else if name.contains("__") {
            Some("`__` separates server and tool in tool names")
        } else if name.ends_with('_') {
            Some("a trailing `_` would run into the `__` separator")
        } else {
            None
        };
        match reason {
            None => Ok(ServerName(name.to_owned())),
            Some(reason) => {
                let suggestion = Some(Self::sanitize(name)).filter(|s| !s.is_empty());
                Err(NameError {
                    name: name.to_owned(),
                    reason,
                    suggestion,
                })
            }
        }
    }

    /// The nearest valid name: other characters become `_`, runs of `_` collapse, the ends are
    /// trimmed and the result cut to the maximum length. Empty when nothing usable remains.
    pub fn sanitize(name: &str) -> String {
        Self::sanitize_within(name, MAX_SERVER_NAME)
    }

    /// [`ServerName::sanitize`], cut to at most `max` characters (room for a suffix).
    pub fn sanitize_within(name: &str, max: usize) -> String {
        let mut out = String::with_capacity(name.len());
        for c in name.chars() {
            let c = if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            };
            if !(c == '_' && out.ends_with('_')) {
                out.push(c);
            }
        }
        let trimmed = out.trim_matches(|c| c == '_' || c == '-');
        let mut cut: String = trimmed.chars().take(max.min(MAX_SERVER_NAME)).collect();
        while cut.ends_with('_') || cut.ends_with('-') {
            cut.pop();
        }
        cut
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ServerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for ServerName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_usual_names() {
        for name in ["github", "my-db", "a", "fs_2", "9lives"] {
            assert!(ServerName::new(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn rejects_names_that_break_tool_prefixes_and_suggests_one() {
        let err = ServerName::new("my server.v2").unwrap_err();
        assert_eq!(err.suggestion.as_deref(), Some("my_server_v2"));
        for name in ["", "a__b", "a_", "_a", "-a", &"x".repeat(41)] {
            assert!(ServerName::new(name).is_err(), "{name}");
        }
        assert_eq!(ServerName::sanitize("__"), "");
    }
}
