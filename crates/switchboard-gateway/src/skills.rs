//! Skills (SEP-2640) through the gateway: every server's skills in one `skills/list`, each
//! under a server-qualified URI. A server's `skill://<rest>` is served as
//! `skill://<server>/<rest>` (in every `--prefix` mode: the name a skill is known by is the
//! last segment before its `SKILL.md`, which this keeps), its files likewise, and
//! `resources/read` of such a URI goes to that server's own URI. `skills/get` answers from the
//! server's listing. A skill of a server outside a profile's path, or that the host leaves out
//! (project approval, managed policy), is neither listed nor got.

use serde_json::Value;

/// A skill's (or its file's) URI scheme.
pub(crate) const SKILL_SCHEME: &str = "skill://";

/// Whether `uri` is a `skill://` URI.
fn is_skill_uri(uri: &str) -> bool {
    uri.get(..SKILL_SCHEME.len())
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case(SKILL_SCHEME))
}

/// The URI an upstream's `skill://<rest>` is served under: `skill://<server>/<rest>`. `None`
/// for any other URI.
pub(crate) fn served_skill_uri(server: &str, uri: &str) -> Option<String> {
    is_skill_uri(uri).then(|| format!("{SKILL_SCHEME}{server}/{}", &uri[SKILL_SCHEME.len()..]))
}

/// `(server, the server's own URI)` of a [`served_skill_uri`]. Server names never hold `/`;
/// the caller checks that the server is one of the host's.
pub(crate) fn parse_skill_uri(uri: &str) -> Option<(&str, String)> {
    if !is_skill_uri(uri) {
        return None;
    }
    let (server, rest) = uri[SKILL_SCHEME.len()..].split_once('/')?;
    (!server.is_empty() && !rest.is_empty()).then(|| (server, format!("{SKILL_SCHEME}{rest}")))
}

/// A skill's entry (MCP JSON) as served: its URI and its files' by [`crate::names::resource_uri`].
pub(crate) fn served_entry(server: &str, mut entry: Value) -> Value {
    if let Some(Value::String(uri)) = entry.get_mut("uri") {
        *uri = crate::names::resource_uri(server, uri);
    }
    if let Some(Value::Array(files)) = entry.get_mut("resources") {
        for file in files {
            if let Some(Value::String(uri)) = file.get_mut("uri") {
                *uri = crate::names::resource_uri(server, uri);
            }
        }
    }
    entry
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_skill_uri_is_served_under_its_server_and_parses_back() {
        let served = served_skill_uri("kit", "skill://code-review/SKILL.md").unwrap();
        assert_eq!(served, "skill://kit/code-review/SKILL.md");
        assert_eq!(
            parse_skill_uri(&served),
            Some(("kit", "skill://code-review/SKILL.md".to_owned()))
        );
        assert_eq!(served_skill_uri("kit", "file:///x"), None);
        assert_eq!(parse_skill_uri("skill://kit"), None);

        let entry = served_entry(
            "kit",
            json!({"uri": "skill://a/SKILL.md", "resources": [
                {"uri": "skill://a/SKILL.md"}, {"uri": "skill://a/refs/x.md"}]}),
        );
        assert_eq!(entry["uri"], "skill://kit/a/SKILL.md");
        assert_eq!(entry["resources"][1]["uri"], "skill://kit/a/refs/x.md");
    }
}
