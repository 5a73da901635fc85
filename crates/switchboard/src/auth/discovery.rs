//! Discovery: protected resource metadata (RFC 9728) and authorization server metadata
//! (RFC 8414 / OpenID Connect Discovery), in the MCP specification's order, with every check
//! that makes it safe to send a user to what was found.
//!
//! - Protected resource metadata: the URL in the challenge's `resource_metadata`, then
//!   `/.well-known/oauth-protected-resource/<path>`, then `/.well-known/oauth-protected-resource`.
//!   Its `resource` must be the server's URL (same origin, the server's path under it).
//! - Authorization server metadata for an issuer with a path `/p`:
//!   `/.well-known/oauth-authorization-server/p`, `/.well-known/openid-configuration/p`,
//!   `/p/.well-known/openid-configuration`; without a path the first two without it. The
//!   document's `issuer` must equal the issuer it was looked up for (simple string comparison).
//! - No protected resource metadata (a 2025-03-26 server): the authorization base URL is the
//!   server's URL with its path discarded, and its metadata is looked up there. That revision
//!   derives the metadata URL from the server, not from an issuer, so the document's `issuer`
//!   need only be at the same origin (it may have a path, as `https://host/oauth`); on every
//!   other path the issuer check is exact. Without metadata there either, the origin's
//!   `/authorize`, `/token` and `/register` are used.
//! - Plain HTTP is refused for anything but loopback; a redirect to another origin is refused.

use serde::Deserialize;
use url::Url;

use super::{AuthCause, AuthError, OAUTH_TIMEOUT};

/// Protected resource metadata, the fields Switchboard uses.
#[derive(Debug, Clone, Deserialize, Default)]
pub(crate) struct ResourceMetadata {
    #[serde(default)]
    pub(crate) resource: Option<String>,
    #[serde(default)]
    pub(crate) authorization_servers: Vec<String>,
    #[serde(default)]
    pub(crate) scopes_supported: Option<Vec<String>>,
}

/// Authorization server metadata, the fields Switchboard uses.
#[derive(Debug, Clone, Deserialize, Default)]
pub(crate) struct ServerMetadata {
    #[serde(default)]
    pub(crate) issuer: Option<String>,
    #[serde(default)]
    pub(crate) authorization_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) token_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) registration_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) revocation_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) scopes_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) grant_types_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) client_id_metadata_document_supported: Option<bool>,
    #[serde(default)]
    pub(crate) authorization_response_iss_parameter_supported: Option<bool>,
    /// RFC 9449 §5.1: the server issues DPoP-bound tokens, proofs signed with these.
    #[serde(default)]
    pub(crate) dpop_signing_alg_values_supported: Option<Vec<String>>,
}

/// What discovery found for one server.
#[derive(Debug, Clone)]
pub(crate) struct Discovery {
    /// The `resource` parameter sent on authorization and token requests (empty: none is
    /// sent, `oauth.resource: false`).
    pub(crate) resource: String,
    pub(crate) resource_metadata: Option<ResourceMetadata>,
    /// The issuer the metadata was looked up for (`None`: the legacy default endpoints).
    pub(crate) issuer: Option<String>,
    pub(crate) metadata: ServerMetadata,
}

impl Discovery {
    /// What an entry's endpoints stand for when the server's authorization server publishes
    /// no usable metadata (`oauth.authorizationEndpoint` and `oauth.tokenEndpoint` given):
    /// the server's URL as the resource, no issuer, PKCE with S256 (OAuth 2.1 requires it).
    pub(crate) fn given(server_url: &Url) -> Discovery {
        Discovery {
            resource: canonical(server_url),
            resource_metadata: None,
            issuer: None,
            metadata: ServerMetadata {
                code_challenge_methods_supported: Some(vec!["S256".to_owned()]),
                ..ServerMetadata::default()
            },
        }
    }

    pub(crate) fn token_endpoint(&self) -> Result<Url, AuthError> {
        endpoint(self.metadata.token_endpoint.as_deref(), "token_endpoint")
    }

    pub(crate) fn authorization_endpoint(&self) -> Result<Url, AuthError> {
        endpoint(
            self.metadata.authorization_endpoint.as_deref(),
            "authorization_endpoint",
        )
    }
}

fn endpoint(value: Option<&str>, field: &str) -> Result<Url, AuthError> {
    let value = value.ok_or_else(|| AuthError::Discovery {
        what: format!("the authorization server metadata has no `{field}`"),
        source: None,
    })?;
    let url = Url::parse(value).map_err(|_| AuthError::Discovery {
        what: format!("the authorization server's `{field}` is not a URL"),
        source: None,
    })?;
    check_safe(&url, field)?;
    Ok(url)
}

/// Refuses plain HTTP for anything but a loopback host, and anything but http(s).
pub(crate) fn check_safe(url: &Url, what: &str) -> Result<(), AuthError> {
    match url.scheme() {
        "https" => Ok(()),
        "http" if is_loopback(url) => Ok(()),
        "http" => Err(AuthError::Refused(format!(
            "{what} uses plain HTTP on a host that is not loopback ({})",
            origin_of(url)
        ))),
        other => Err(AuthError::Refused(format!(
            "{what} has the scheme `{other}`, not https"
        ))),
    }
}

pub(crate) fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// `scheme://host:port` of a URL: what messages show, never a path or a query.
pub(crate) fn origin_of(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// Runs discovery for the server at `server_url`, starting from a challenge's
/// `resource_metadata` URL when the server sent one.
pub(crate) async fn discover(
    client: &reqwest::Client,
    server_url: &Url,
    resource_metadata_url: Option<&str>,
) -> Result<Discovery, AuthError> {
    check_safe(server_url, "the server URL")?;
    let prm = resource_metadata(client, server_url, resource_metadata_url).await?;
    let Some(prm) = prm else {
        // A 2025-03-26 server: the authorization server lives at the server's origin.
        let issuer = origin_of(server_url);
        let resource = canonical(server_url);
        let metadata = match server_metadata(client, &issuer, IssuerCheck::SameOrigin).await? {
            Some(metadata) => metadata,
            None => legacy_endpoints(server_url),
        };
        return Ok(Discovery {
            resource,
            resource_metadata: None,
            issuer: metadata.issuer.clone(),
            metadata,
        });
    };
    let resource = match &prm.resource {
        Some(resource) => {
            check_resource(server_url, resource)?;
            resource.clone()
        }
        None => canonical(server_url),
    };
    let issuer =
        prm.authorization_servers
            .first()
            .cloned()
            .ok_or_else(|| AuthError::Discovery {
                what: "the protected resource metadata names no authorization server".to_owned(),
                source: None,
            })?;
    let issuer_url = Url::parse(&issuer).map_err(|_| AuthError::Discovery {
        what: "the authorization server in the resource metadata is not a URL".to_owned(),
        source: None,
    })?;
    check_safe(&issuer_url, "the authorization server")?;
    let metadata = server_metadata(client, &issuer, IssuerCheck::Exact).await?.ok_or_else(|| {
        AuthError::Discovery { what: format!(
            "no authorization server metadata at {} (tried the OAuth and OpenID well-known URLs)",
            origin_of(&issuer_url)
        ), source: None }
    })?;
    Ok(Discovery {
        resource,
        resource_metadata: Some(prm),
        issuer: Some(issuer),
        metadata,
    })
}

/// The server's URL as a resource identifier: no fragment.
pub(crate) fn canonical(url: &Url) -> String {
    let mut url = url.clone();
    url.set_fragment(None);
    url.to_string()
}

/// The metadata's `resource` must be the server: the same origin, and the server's path at or
/// under the resource's path.
fn check_resource(server_url: &Url, resource: &str) -> Result<(), AuthError> {
    let mismatch = || {
        AuthError::Refused(format!(
            "the protected resource metadata is for another resource ({resource}), not this server ({})",
            canonical(server_url)
        ))
    };
    let resource_url = Url::parse(resource).map_err(|_| mismatch())?;
    if resource_url.origin() != server_url.origin() {
        return Err(mismatch());
    }
    let with_slash = |p: &str| {
        if p.ends_with('/') {
            p.to_owned()
        } else {
            format!("{p}/")
        }
    };
    if !with_slash(server_url.path()).starts_with(&with_slash(resource_url.path())) {
        return Err(mismatch());
    }
    Ok(())
}

async fn resource_metadata(
    client: &reqwest::Client,
    server_url: &Url,
    from_challenge: Option<&str>,
) -> Result<Option<ResourceMetadata>, AuthError> {
    let mut candidates = Vec::new();
    if let Some(url) = from_challenge.and_then(|u| Url::parse(u).ok()) {
        check_safe(&url, "the resource metadata URL")?;
        candidates.push(url);
    }
    let path = server_url.path().trim_end_matches('/');
    let origin = origin_of(server_url);
    if !path.is_empty()
        && let Ok(url) = Url::parse(&format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        ))
    {
        candidates.push(url);
    }
    if let Ok(url) = Url::parse(&format!("{origin}/.well-known/oauth-protected-resource")) {
        candidates.push(url);
    }
    for url in candidates {
        if let Some(value) = get_json(client, &url).await? {
            let prm: ResourceMetadata =
                serde_json::from_value(value).map_err(|e| AuthError::Discovery {
                    what: "the protected resource metadata is malformed".to_owned(),
                    source: Some(AuthCause::Json(e)),
                })?;
            return Ok(Some(prm));
        }
    }
    Ok(None)
}

/// The metadata URLs for an issuer, in the specification's order.
pub(crate) fn metadata_urls(issuer: &Url) -> Vec<Url> {
    let origin = origin_of(issuer);
    let path = issuer.path().trim_end_matches('/');
    let texts = if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    };
    texts.iter().filter_map(|t| Url::parse(t).ok()).collect()
}

/// How the metadata's `issuer` must match the one it was looked up for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IssuerCheck {
    /// RFC 8414 §3.3: identical.
    Exact,
    /// The 2025-03-26 authorization base URL (an origin): any issuer at that origin.
    SameOrigin,
}

pub(crate) async fn server_metadata(
    client: &reqwest::Client,
    issuer: &str,
    check: IssuerCheck,
) -> Result<Option<ServerMetadata>, AuthError> {
    let issuer_url = Url::parse(issuer).map_err(|_| AuthError::Discovery {
        what: "the authorization server is not a URL".to_owned(),
        source: None,
    })?;
    for url in metadata_urls(&issuer_url) {
        let Some(value) = get_json(client, &url).await? else {
            continue;
        };
        let metadata: ServerMetadata =
            serde_json::from_value(value).map_err(|e| AuthError::Discovery {
                what: "the authorization server metadata is malformed".to_owned(),
                source: Some(AuthCause::Json(e)),
            })?;
        let found = metadata.issuer.as_deref().unwrap_or("");
        let accepted = match check {
            IssuerCheck::Exact => same_issuer(found, issuer),
            IssuerCheck::SameOrigin => same_origin_issuer(found, &issuer_url),
        };
        if !accepted {
            return Err(AuthError::Refused(format!(
                "the authorization server metadata names the issuer `{found}`, not `{issuer}` it was looked up for"
            )));
        }
        for (value, field) in [
            (&metadata.authorization_endpoint, "authorization_endpoint"),
            (&metadata.token_endpoint, "token_endpoint"),
            (&metadata.registration_endpoint, "registration_endpoint"),
        ] {
            if let Some(value) = value {
                endpoint(Some(value), field)?;
            }
        }
        return Ok(Some(metadata));
    }
    Ok(None)
}

/// RFC 8414 §3.3: identical. A root issuer may be written with or without its slash (the URL
/// the metadata is fetched from is the same).
fn same_issuer(found: &str, expected: &str) -> bool {
    found == expected
        || found.trim_end_matches('/') == expected.trim_end_matches('/')
            && Url::parse(expected).is_ok_and(|u| u.path() == "/")
}

/// An issuer at the origin of the 2025-03-26 authorization base URL `base`: an `https` (or
/// loopback `http`) URL with no query or fragment (RFC 8414 §2).
fn same_origin_issuer(found: &str, base: &Url) -> bool {
    Url::parse(found).is_ok_and(|url| {
        url.origin() == base.origin() && url.query().is_none() && url.fragment().is_none()
    })
}

/// A 2025-03-26 server without metadata: the default endpoints at its origin.
fn legacy_endpoints(server_url: &Url) -> ServerMetadata {
    let origin = origin_of(server_url);
    ServerMetadata {
        authorization_endpoint: Some(format!("{origin}/authorize")),
        token_endpoint: Some(format!("{origin}/token")),
        registration_endpoint: Some(format!("{origin}/register")),
        code_challenge_methods_supported: Some(vec!["S256".to_owned()]),
        ..ServerMetadata::default()
    }
}

/// GETs a JSON document. `None` when it is not there (any 4xx); a redirect to another origin
/// is refused; the request is bounded by [`OAUTH_TIMEOUT`].
async fn get_json(
    client: &reqwest::Client,
    url: &Url,
) -> Result<Option<serde_json::Value>, AuthError> {
    let response = client
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "application/json")
        .header("MCP-Protocol-Version", "2025-11-25")
        .timeout(OAUTH_TIMEOUT)
        .send()
        .await
        .map_err(|e| AuthError::Discovery {
            what: "cannot fetch the metadata".to_owned(),
            source: Some(AuthCause::http(url, e)),
        })?;
    let status = response.status();
    if status.is_redirection() {
        return Err(AuthError::Refused(format!(
            "discovery at {} was redirected to another origin",
            origin_of(url)
        )));
    }
    if !status.is_success() {
        return Ok(None);
    }
    let bytes = response.bytes().await.map_err(|e| AuthError::Discovery {
        what: "cannot read the metadata".to_owned(),
        source: Some(AuthCause::http(url, e)),
    })?;
    match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(value) if value.is_object() => Ok(Some(value)),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn metadata_urls_follow_the_specification_order() {
        let with_path = metadata_urls(&Url::parse("https://as.example/tenant1").unwrap());
        let texts: Vec<_> = with_path.iter().map(Url::as_str).collect();
        assert_eq!(
            texts,
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            metadata_urls(&Url::parse("https://as.example").unwrap()).len(),
            2
        );
    }

    #[test]
    fn plain_http_only_on_loopback() {
        assert!(check_safe(&Url::parse("http://127.0.0.1:9/x").unwrap(), "x").is_ok());
        assert!(check_safe(&Url::parse("http://localhost/x").unwrap(), "x").is_ok());
        assert!(check_safe(&Url::parse("http://[::1]/x").unwrap(), "x").is_ok());
        assert!(check_safe(&Url::parse("http://example.com/x").unwrap(), "x").is_err());
        assert!(check_safe(&Url::parse("https://example.com/x").unwrap(), "x").is_ok());
    }

    #[test]
    fn the_resource_must_be_this_server() {
        let server = Url::parse("https://mcp.example/api/mcp").unwrap();
        assert!(check_resource(&server, "https://mcp.example/api/mcp").is_ok());
        assert!(check_resource(&server, "https://mcp.example/").is_ok());
        assert!(check_resource(&server, "https://mcp.example/other").is_err());
        assert!(check_resource(&server, "https://evil.example/api/mcp").is_err());
    }

    #[test]
    fn a_2025_03_26_issuer_may_have_a_path_at_the_same_origin_only() {
        let base = Url::parse("http://localhost:3000").unwrap();
        assert!(same_origin_issuer("http://localhost:3000/oauth", &base));
        assert!(same_origin_issuer("http://localhost:3000", &base));
        assert!(!same_origin_issuer("http://localhost:3001/oauth", &base));
        assert!(!same_origin_issuer("https://localhost:3000/oauth", &base));
        assert!(!same_origin_issuer(
            "http://localhost:3000/oauth?x=1",
            &base
        ));
        assert!(!same_origin_issuer("", &base));
        // Everywhere else, an issuer with another path is still refused.
        assert!(!same_issuer(
            "http://localhost:3000/oauth",
            "http://localhost:3000"
        ));
    }

    #[test]
    fn issuers_compare_as_strings() {
        assert!(same_issuer("https://as.example", "https://as.example/"));
        assert!(!same_issuer(
            "https://as.example/t/",
            "https://as.example/t"
        ));
        assert!(!same_issuer("https://evil.example", "https://as.example"));
    }
}
