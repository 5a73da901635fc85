//! Qualified names: `mcp__<server>__<tool>`, the names the catalogue gives servers' tools (and
//! the host their prompts) and the names permission rules and hooks match.
//!
//! Characters of the tool part outside `[A-Za-z0-9_-]` become `_`. Model APIs accept at most 64
//! characters, so a longer name is cut and given `_` and 8 hex digits of a hash of the server's
//! own tool name: stable across runs and start orders, and unique. Server names never contain
//! `__` ([`ServerName`](crate::config::ServerName)), so the first `__` after the prefix ends
//! the server's name and every qualified name parses back to its server.

use std::borrow::Cow;
use std::fmt;

use sha2::{Digest, Sha256};

/// The longest qualified name.
pub const MAX_QUALIFIED_NAME: usize = 64;
/// What every qualified name starts with.
pub(crate) const PREFIX: &str = "mcp__";
/// What separates the server's name from the tool's.
pub(crate) const SEPARATOR: &str = "__";
const HASH_LEN: usize = 8;

/// A qualified name `mcp__<server>__<tool>`: made from a server's name and its own name of a
/// tool ([`new`](Self::new)), or parsed from text ([`parse`](Self::parse)). Compares, orders
/// and hashes as its text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QualifiedName {
    text: String,
    /// The length of the server's name, which starts right after the prefix.
    server_len: usize,
}

impl QualifiedName {
    /// The name of `server`'s tool `tool`: sanitised, and cut with a hash when it would be
    /// longer than [`MAX_QUALIFIED_NAME`].
    pub fn new(server: &str, tool: &str) -> QualifiedName {
        QualifiedName::build(server, tool, false)
    }

    /// [`new`](Self::new), with the hash even when the name fits: two tools of a server whose
    /// names sanitise alike each get one, so neither takes the other's name.
    pub fn hashed(server: &str, tool: &str) -> QualifiedName {
        QualifiedName::build(server, tool, true)
    }

    fn build(server: &str, tool: &str, force_hash: bool) -> QualifiedName {
        let prefix = PREFIX.len() + server.len() + SEPARATOR.len();
        let clean = clean(tool);
        let mut text = String::with_capacity(MAX_QUALIFIED_NAME.max(prefix + clean.len()));
        text.push_str(PREFIX);
        text.push_str(server);
        text.push_str(SEPARATOR);
        if !force_hash && prefix + clean.len() <= MAX_QUALIFIED_NAME {
            text.push_str(&clean);
        } else {
            let room = MAX_QUALIFIED_NAME.saturating_sub(prefix + 1 + HASH_LEN);
            text.extend(clean.chars().take(room));
            text.push('_');
            text.push_str(&short_hash(tool));
        }
        QualifiedName {
            text,
            server_len: server.len(),
        }
    }

    /// Reads a qualified name; `None` when `text` is not one (no `mcp__` prefix, no server,
    /// no `__` after the server).
    pub fn parse(text: &str) -> Option<QualifiedName> {
        let (server, _) = QualifiedName::split(text)?;
        Some(QualifiedName {
            text: text.to_owned(),
            server_len: server.len(),
        })
    }

    /// The server's and the tool's part of a qualified name, without copying it
    /// (`mcp__github__get_issue` → `("github", "get_issue")`); `None` as for
    /// [`parse`](Self::parse).
    pub fn split(text: &str) -> Option<(&str, &str)> {
        let rest = text.strip_prefix(PREFIX)?;
        let (server, tool) = rest.split_once(SEPARATOR)?;
        (!server.is_empty()).then_some((server, tool))
    }

    /// The server's name.
    pub fn server(&self) -> &str {
        &self.text[PREFIX.len()..PREFIX.len() + self.server_len]
    }

    /// The tool's part as the name shows it: sanitised, perhaps cut and hashed — the server's
    /// own name of the tool is the catalogue's [`Tool::name`](crate::Tool::name).
    pub fn tool_part(&self) -> &str {
        &self.text[PREFIX.len() + self.server_len + SEPARATOR.len()..]
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn into_string(self) -> String {
        self.text
    }

    /// A tool's name with characters outside `[A-Za-z0-9_-]` replaced by `_`.
    pub fn sanitize(tool: &str) -> String {
        clean(tool).into_owned()
    }

    /// `name` cut to at most `max` characters by the rule qualified names are cut by (its
    /// start, `_`, 8 hex digits of a hash of the whole name): for a surface with a shorter
    /// budget (the gateway's `serve --max-name-length`).
    pub fn fit(name: &str, max: usize) -> Cow<'_, str> {
        fit(name, max)
    }
}

fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// [`QualifiedName::sanitize`], copying only a name that changes.
pub(crate) fn clean(tool: &str) -> Cow<'_, str> {
    if tool.chars().all(allowed) {
        return Cow::Borrowed(tool);
    }
    Cow::Owned(
        tool.chars()
            .map(|c| if allowed(c) { c } else { '_' })
            .collect(),
    )
}

/// `name` if it has at most `max` characters, else its first characters, `_` and 8 hex digits
/// of a hash of the whole name, `max` characters in all: the rule qualified names are cut by,
/// for a shorter budget (a gateway whose client adds its own prefix, `serve
/// --max-name-length`).
pub(crate) fn fit(name: &str, max: usize) -> Cow<'_, str> {
    if name.chars().count() <= max {
        return Cow::Borrowed(name);
    }
    let room = max.saturating_sub(1 + HASH_LEN);
    let mut text: String = name.chars().take(room).collect();
    text.push('_');
    text.push_str(&short_hash(name));
    Cow::Owned(text)
}

/// 8 hex digits of SHA-256 of the text.
pub(crate) fn short_hash(text: &str) -> String {
    hex::encode(&Sha256::digest(text.as_bytes())[..HASH_LEN / 2])
}

impl fmt::Display for QualifiedName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl AsRef<str> for QualifiedName {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

impl From<QualifiedName> for String {
    fn from(name: QualifiedName) -> String {
        name.text
    }
}

impl PartialEq<str> for QualifiedName {
    fn eq(&self, other: &str) -> bool {
        self.text == other
    }
}

impl PartialEq<&str> for QualifiedName {
    fn eq(&self, other: &&str) -> bool {
        self.text == *other
    }
}

impl PartialEq<String> for QualifiedName {
    fn eq(&self, other: &String) -> bool {
        &self.text == other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_and_sanitised() {
        assert_eq!(
            QualifiedName::new("github", "create_issue"),
            "mcp__github__create_issue"
        );
        let name = QualifiedName::new("my-db", "run query.v2");
        assert_eq!(name, "mcp__my-db__run_query_v2");
        assert_eq!(name.server(), "my-db");
        assert_eq!(name.tool_part(), "run_query_v2");
        assert_eq!(name.to_string(), "mcp__my-db__run_query_v2");
    }

    #[test]
    fn names_parse_back_to_their_server_and_tool() {
        let name = QualifiedName::parse("mcp__my-db__run_query_v2").unwrap();
        assert_eq!((name.server(), name.tool_part()), ("my-db", "run_query_v2"));
        assert_eq!(name, QualifiedName::new("my-db", "run_query_v2"));
        // The first `__` after the prefix ends the server's name.
        let name = QualifiedName::parse("mcp__a__b__c").unwrap();
        assert_eq!((name.server(), name.tool_part()), ("a", "b__c"));
        assert_eq!(QualifiedName::split("mcp__s__"), Some(("s", "")));
        for not_one in ["read_file", "mcp__s", "mcp____t", "mcp_s__t", ""] {
            assert_eq!(QualifiedName::parse(not_one), None, "{not_one}");
        }
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash_and_stay_unique() {
        let a = QualifiedName::new("server", &"x".repeat(100));
        let b = QualifiedName::new("server", &format!("{}y", "x".repeat(99)));
        assert_eq!(a.as_str().len(), MAX_QUALIFIED_NAME);
        assert_eq!(b.as_str().len(), MAX_QUALIFIED_NAME);
        assert_ne!(a, b);
        assert_eq!(a, QualifiedName::new("server", &"x".repeat(100)));
        assert!(a.as_str().starts_with("mcp__server__xxx"));
        assert_eq!(a.server(), "server");
        assert_eq!(QualifiedName::parse(a.as_str()), Some(a));
    }

    #[test]
    fn a_forced_hash_tells_apart_names_that_sanitise_alike() {
        let dotted = QualifiedName::hashed("s", "a.b");
        let spaced = QualifiedName::hashed("s", "a b");
        assert_ne!(dotted, spaced);
        assert!(dotted.as_str().starts_with("mcp__s__a_b_"), "{dotted}");
        assert_eq!(dotted.server(), "s");
    }
}
