//! Resource URIs that name their server: `switchboard://<server>/<the server's own URI>`.
//!
//! The server's URI is kept verbatim after the first `/`, so a URI template keeps its
//! variables and a URI filled in from it maps back by the same rule. Server names are
//! `[A-Za-z0-9][A-Za-z0-9_-]*`, so they never contain `/`.

const SCHEME: &str = "switchboard://";

/// The URI a downstream client sees for `uri` of `server`.
pub fn to_gateway(server: &str, uri: &str) -> String {
    format!("{SCHEME}{server}/{uri}")
}

/// `(server, the server's URI)` for a gateway URI, or `None` for any other URI.
pub fn from_gateway(uri: &str) -> Option<(&str, &str)> {
    let rest = uri.strip_prefix(SCHEME)?;
    let (server, original) = rest.split_once('/')?;
    (!server.is_empty() && !original.is_empty()).then_some((server, original))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_and_templates_map_back() {
        let uri = to_gateway("everything", "demo://resource/static/document/a.md");
        assert_eq!(
            uri,
            "switchboard://everything/demo://resource/static/document/a.md"
        );
        assert_eq!(
            from_gateway(&uri),
            Some(("everything", "demo://resource/static/document/a.md"))
        );
        let template = to_gateway("kit", "file:///{path}");
        let filled = template.replace("{path}", "tmp/x");
        assert_eq!(from_gateway(&filled), Some(("kit", "file:///tmp/x")));
        assert_eq!(from_gateway("file:///tmp/x"), None);
        assert_eq!(from_gateway("switchboard://kit"), None);
    }
}
