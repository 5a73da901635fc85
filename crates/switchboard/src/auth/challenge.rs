//! `WWW-Authenticate: Bearer k="v", …` (RFC 6750 §3, RFC 9728 §5.1; `DPoP k="v"`, RFC 9449
//! §7.1): the parameters a 401 or 403 carries — `resource_metadata`, `scope`, `error`.

use std::collections::BTreeMap;

/// The parameters of a `Bearer` challenge, names lower-cased.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    params: BTreeMap<String, String>,
}

impl Challenge {
    /// Parses the `Bearer` and `DPoP` challenges of a header value (a later one's parameters
    /// win); other schemes' parameters are skipped.
    pub(crate) fn parse(header: &str) -> Challenge {
        let mut params = BTreeMap::new();
        let mut rest = header.trim();
        let mut in_bearer = false;
        while !rest.is_empty() {
            rest = rest.trim_start_matches([' ', ',', '\t']);
            let token_end = rest
                .find(|c: char| c == '=' || c == ',' || c.is_whitespace())
                .unwrap_or(rest.len());
            let token = &rest[..token_end];
            let after = rest[token_end..].trim_start();
            if let Some(value_part) = after.strip_prefix('=') {
                let value_part = value_part.trim_start();
                let (value, remaining) = if let Some(quoted) = value_part.strip_prefix('"') {
                    let mut value = String::new();
                    let mut chars = quoted.char_indices();
                    let mut end = quoted.len();
                    while let Some((i, c)) = chars.next() {
                        match c {
                            '\\' => {
                                if let Some((_, next)) = chars.next() {
                                    value.push(next);
                                }
                            }
                            '"' => {
                                end = i + 1;
                                break;
                            }
                            c => value.push(c),
                        }
                    }
                    (value, &quoted[end.min(quoted.len())..])
                } else {
                    let end = value_part.find(',').unwrap_or(value_part.len());
                    (value_part[..end].trim().to_owned(), &value_part[end..])
                };
                if in_bearer && !token.is_empty() {
                    params.insert(token.to_ascii_lowercase(), value);
                }
                rest = remaining;
            } else {
                // A scheme name (or a token68): a new challenge starts.
                in_bearer =
                    token.eq_ignore_ascii_case("bearer") || token.eq_ignore_ascii_case("dpop");
                if token.is_empty() {
                    rest = after.get(1..).unwrap_or("");
                } else {
                    rest = after;
                }
            }
        }
        Challenge { params }
    }

    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.params
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    pub(crate) fn resource_metadata(&self) -> Option<&str> {
        self.get("resource_metadata")
    }

    /// The scopes the server asks for, split on spaces.
    pub(crate) fn scopes(&self) -> Option<Vec<String>> {
        self.get("scope")
            .map(|s| s.split_whitespace().map(str::to_owned).collect())
    }

    pub(crate) fn is_insufficient_scope(&self) -> bool {
        self.get("error") == Some("insufficient_scope")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_quoted_and_bare() {
        let c = Challenge::parse(
            r#"Bearer error="insufficient_scope", scope="a b", resource_metadata="https://x/.well-known/oauth-protected-resource/mcp", realm=r"#,
        );
        assert!(c.is_insufficient_scope());
        assert_eq!(c.scopes(), Some(vec!["a".to_owned(), "b".to_owned()]));
        assert_eq!(
            c.resource_metadata(),
            Some("https://x/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(c.get("realm"), Some("r"));
    }

    #[test]
    fn other_schemes_are_skipped() {
        let c = Challenge::parse(r#"Basic realm="a", Bearer scope="s""#);
        assert_eq!(c.get("realm"), None);
        assert_eq!(c.get("scope"), Some("s"));
        assert_eq!(Challenge::parse("Bearer").get("scope"), None);
        assert_eq!(
            Challenge::parse(r#"DPoP error="use_dpop_nonce", resource_metadata="m""#)
                .resource_metadata(),
            Some("m")
        );
        assert_eq!(
            Challenge::parse(r#"Bearer scope="a\"b""#).get("scope"),
            Some("a\"b")
        );
    }
}
