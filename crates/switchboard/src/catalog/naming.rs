//! Qualified tool names: `mcp__<server>__<tool>`.
//!
//! Characters outside `[A-Za-z0-9_-]` become `_`. Model APIs accept at most 64 characters, so a
//! longer name is cut and given `_` and 8 hex digits of a hash of the server's own tool name:
//! stable across runs and start orders, and unique.

use sha2::{Digest, Sha256};

/// The longest qualified name.
pub const MAX_QUALIFIED_NAME: usize = 64;
const PREFIX: &str = "mcp__";
const SEPARATOR: &str = "__";
const HASH_LEN: usize = 8;

/// The tool part with characters outside `[A-Za-z0-9_-]` replaced by `_`.
pub fn sanitize(tool: &str) -> String {
    tool.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// 8 hex digits of SHA-256 of the text.
pub(crate) fn short_hash(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .take(HASH_LEN / 2)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `mcp__<server>__<tool>` for a server's tool; `force_hash` adds the hash even when the name
/// fits (to settle a collision between two tools that sanitise alike).
pub fn qualified_name(server: &str, tool: &str, force_hash: bool) -> String {
    let prefix = format!("{PREFIX}{server}{SEPARATOR}");
    let clean = sanitize(tool);
    if !force_hash && prefix.len() + clean.len() <= MAX_QUALIFIED_NAME {
        return format!("{prefix}{clean}");
    }
    let room = MAX_QUALIFIED_NAME.saturating_sub(prefix.len() + 1 + HASH_LEN);
    let cut: String = clean.chars().take(room).collect();
    format!("{prefix}{cut}_{}", short_hash(tool))
}

/// The server part of a qualified name (`mcp__github__x` → `github`). Server names never
/// contain `__`, so the first separator after the prefix ends it.
pub fn server_of(qualified: &str) -> Option<&str> {
    let rest = qualified.strip_prefix(PREFIX)?;
    let end = rest.find(SEPARATOR)?;
    Some(&rest[..end]).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_and_sanitised() {
        assert_eq!(
            qualified_name("github", "create_issue", false),
            "mcp__github__create_issue"
        );
        assert_eq!(
            qualified_name("my-db", "run query.v2", false),
            "mcp__my-db__run_query_v2"
        );
        assert_eq!(server_of("mcp__my-db__run_query_v2"), Some("my-db"));
        assert_eq!(server_of("mcp__a__b__c"), Some("a"));
        assert_eq!(server_of("read_file"), None);
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash_and_stay_unique() {
        let a = qualified_name("server", &"x".repeat(100), false);
        let b = qualified_name("server", &format!("{}y", "x".repeat(99)), false);
        assert_eq!(a.len(), MAX_QUALIFIED_NAME);
        assert_eq!(b.len(), MAX_QUALIFIED_NAME);
        assert_ne!(a, b);
        assert_eq!(a, qualified_name("server", &"x".repeat(100), false));
        assert!(a.starts_with("mcp__server__xxx"));
    }
}
