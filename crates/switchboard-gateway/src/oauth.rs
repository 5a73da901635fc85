//! Inbound identity: the gateway as an OAuth 2.1 resource server (`serve --http
//! --oauth-issuer URL --oauth-audience URL`; MCP authorization, 2025-06-18 and 2025-11-25).
//!
//! - Protected resource metadata (RFC 9728) at `/.well-known/oauth-protected-resource` (and
//!   any path below it, the MCP endpoint's `…/mcp` among them): the audience as `resource`,
//!   the issuer as its one authorization server ([`ResourceServer::metadata`]).
//! - A request without a valid token gets 401 with `WWW-Authenticate: Bearer
//!   resource_metadata="…"` (and `error="invalid_token"` when it sent one): the metadata's
//!   URL is made from the audience when that is an `http(s)` URL (the public address clients
//!   use), else from the request's `Host` ([`ResourceServer::challenge`]).
//! - Access tokens are JWTs ([`ResourceServer::verify`]): signed by a key of the issuer's JWKS
//!   (RS256/384/512, PS256/384/512, ES256/384, EdDSA; never a shared secret), `iss` the
//!   issuer, `aud` the audience, `exp` and `nbf` with [`LEEWAY`], `sub` present. The JWKS is
//!   found through the issuer's metadata (`/.well-known/oauth-authorization-server`, else
//!   `openid-configuration`; its `issuer` must be the one configured) and cached; a token
//!   signed by a key the cache does not hold refetches it, at most once every [`REFETCH`].
//! - The token's `sub` and scopes (`scope`, space-separated, or `scp`, an array) become the
//!   request's [`Identity`], a request extension the session handlers read
//!   ([`Identity::of_request`]) for the tool rules ([`crate::rules`]).
//!
//! Tokens are never logged; a refusal's reason (expired, wrong audience, unknown key, …) goes
//! to the client in `error_description` and to the log at debug level.

use parking_lot::RwLock;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Value, json};
use url::Url;

/// How far `exp` and `nbf` may be off (clock skew between the issuer and the gateway).
pub(crate) const LEEWAY: Duration = Duration::from_secs(30);

/// The least time between two fetches of the JWKS for an unknown key.
pub(crate) const REFETCH: Duration = Duration::from_secs(5);

/// The bound on each request to the issuer (metadata, JWKS).
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest metadata or JWKS document read.
const MAX_DOCUMENT: usize = 1024 * 1024;

/// The path of the protected resource metadata (RFC 9728 §3).
pub(crate) const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Signature algorithms a token may use: public-key ones only (an `HS256` token would be
/// checked against a key anyone reading the JWKS has).
const ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Who sent a request: the subject and scopes of its access token. A request with the static
/// bearer token (or over stdio) has none: only the rules for everyone apply to it.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Identity {
    /// The token's `sub`.
    pub subject: String,
    /// The token's scopes (`scope` or `scp`).
    pub scopes: Vec<String>,
    /// The access token itself: the subject token a per-user server's token exchange
    /// (`oauth.tokenExchange`) hands on. Never printed.
    pub(crate) token: Option<Arc<str>>,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity")
            .field("subject", &self.subject)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl Identity {
    /// An identity of `subject` with `scopes` (no token: rules and tests).
    pub fn new(subject: impl Into<String>, scopes: Vec<String>) -> Identity {
        Identity {
            subject: subject.into(),
            scopes,
            token: None,
        }
    }
}

impl Identity {
    /// The identity the OAuth check gave an HTTP request (rmcp hands the request's parts to
    /// the handler), if any.
    pub fn of_request(extensions: &rmcp::model::Extensions) -> Option<&Identity> {
        extensions
            .get::<axum::http::request::Parts>()?
            .extensions
            .get::<Identity>()
    }

    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}

/// `--oauth-issuer` and `--oauth-audience`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthOptions {
    /// The authorization server's issuer identifier.
    pub issuer: String,
    /// The resource tokens must be for (`aud`): the gateway's public MCP URL.
    pub audience: String,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    #[error("--oauth-issuer {issuer}: {why}")]
    Issuer { issuer: String, why: String },
    #[error("--oauth-audience: {0}")]
    Audience(String),
    #[error("the issuer {issuer}: {why}")]
    Discovery { issuer: String, why: String },
}

/// The resource server: the metadata it serves and the check of each token.
#[derive(Debug)]
pub struct ResourceServer {
    options: OAuthOptions,
    /// The issuers a token's `iss` may name: as configured, and as the metadata spells it
    /// when it differs only by a trailing slash.
    issuers: RwLock<Vec<String>>,
    client: reqwest::Client,
    keys: RwLock<Arc<JwkSet>>,
    /// The JWKS's URL once discovered, and when the last fetch ended; held across a fetch, so
    /// one fetch runs at a time.
    fetch: tokio::sync::Mutex<Fetched>,
    /// How many fetches have ended: a request that waited for the lock while one ran takes
    /// its outcome rather than fetching again.
    fetches: std::sync::atomic::AtomicU64,
    /// Scopes the tool rules name (the metadata's `scopes_supported`).
    scopes: Vec<String>,
    /// The least time between two fetches for an unknown key (a failed fetch is remembered
    /// as long).
    refetch: Duration,
    /// The bound on each request to the issuer.
    fetch_timeout: Duration,
}

#[derive(Debug, Default)]
struct Fetched {
    jwks_uri: Option<Url>,
    /// When the last fetch ended.
    at: Option<Instant>,
    /// Whether it failed.
    failed: bool,
}

impl ResourceServer {
    /// A resource server for `options`; `scopes` are those the tool rules name. The issuer
    /// must be `https` (or `http` on a loopback address); nothing is fetched yet.
    pub fn new(options: OAuthOptions, scopes: Vec<String>) -> Result<Self, OAuthError> {
        let issuer_error = |why: &str| OAuthError::Issuer {
            issuer: switchboard::redact_url(&options.issuer),
            why: why.to_owned(),
        };
        let issuer = Url::parse(&options.issuer).map_err(|e| issuer_error(&e.to_string()))?;
        if issuer.query().is_some() || issuer.fragment().is_some() {
            return Err(issuer_error("an issuer has no query or fragment"));
        }
        if issuer.scheme() != "https" && !(issuer.scheme() == "http" && is_loopback(&issuer)) {
            return Err(issuer_error(
                "must be an https URL (http only on a loopback address)",
            ));
        }
        if options.audience.trim().is_empty() {
            return Err(OAuthError::Audience("the audience is empty".to_owned()));
        }
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let client = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::limited(3))
            .build()
            .map_err(|e| issuer_error(&format!("cannot build an HTTP client: {e}")))?;
        Ok(ResourceServer {
            issuers: RwLock::new(vec![options.issuer.clone()]),
            options,
            client,
            keys: RwLock::default(),
            fetch: tokio::sync::Mutex::default(),
            fetches: std::sync::atomic::AtomicU64::new(0),
            scopes,
            refetch: REFETCH,
            fetch_timeout: FETCH_TIMEOUT,
        })
    }

    /// The scopes the metadata names (`scopes_supported`): those the tool rules name.
    pub fn set_scopes(&mut self, scopes: Vec<String>) {
        self.scopes = scopes;
    }

    /// The least time between two fetches of the JWKS for a key it does not hold (by default
    /// [`REFETCH`]).
    pub fn set_refetch(&mut self, refetch: Duration) {
        self.refetch = refetch;
    }

    /// The bound on each request to the issuer (metadata, JWKS; by default 10 s).
    pub fn set_fetch_timeout(&mut self, timeout: Duration) {
        self.fetch_timeout = timeout;
    }

    pub fn options(&self) -> &OAuthOptions {
        &self.options
    }

    /// Discovers the JWKS and fetches it now (a check at start: a wrong issuer is reported
    /// before the first client comes; the gateway serves all the same and tries again when a
    /// token comes).
    pub async fn refresh(&self) -> Result<usize, OAuthError> {
        let mut fetched = self.fetch.lock().await;
        self.fetch_keys(&mut fetched).await?;
        Ok(self.keys().keys.len())
    }

    /// The identity of a request carrying `token`, or why the token is refused (no secret in
    /// it: it goes to the client as the `error_description`).
    pub async fn verify(&self, token: &str) -> Result<Identity, String> {
        let header =
            jsonwebtoken::decode_header(token).map_err(|_| "the token is not a JWT".to_owned())?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(format!(
                "the token's algorithm {:?} is not accepted",
                header.alg
            ));
        }
        let jwk = self.key(header.kid.as_deref(), header.alg).await?;
        let key = DecodingKey::from_jwk(&jwk)
            .map_err(|e| format!("the issuer's key cannot be used: {e}"))?;
        let mut validation = Validation::new(header.alg);
        validation.leeway = LEEWAY.as_secs();
        validation.validate_nbf = true;
        validation.set_audience(&[&self.options.audience]);
        validation.set_issuer(&self.issuers.read().clone());
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let claims = jsonwebtoken::decode::<Value>(token, &key, &validation)
            .map_err(|e| refusal(&e))?
            .claims;
        let subject = claims
            .get("sub")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or("the token's `sub` is not a string")?
            .to_owned();
        Ok(Identity {
            subject,
            scopes: scopes(&claims),
            token: Some(Arc::from(token)),
        })
    }

    /// The key `kid` (or, a token naming none, the one key of `alg`'s kind), fetching the JWKS
    /// again when it is not there and the last fetch ended longer than the refetch bound ago.
    /// One fetch runs at a time, and the requests that waited for it take its outcome (a slow
    /// or unreachable issuer costs them one wait, not one each); a failed fetch is remembered
    /// for the refetch bound too.
    async fn key(&self, kid: Option<&str>, alg: Algorithm) -> Result<Jwk, String> {
        use std::sync::atomic::Ordering;
        if let Some(jwk) = find(&self.keys(), kid, alg) {
            return Ok(jwk);
        }
        let seen = self.fetches.load(Ordering::Acquire);
        let mut fetched = self.fetch.lock().await;
        // Another request may have fetched it meanwhile.
        if let Some(jwk) = find(&self.keys(), kid, alg) {
            return Ok(jwk);
        }
        let unknown = || match kid {
            Some(kid) => format!("the issuer has no key `{kid}`"),
            None => "the token names no key (`kid`) and the issuer has no single one".to_owned(),
        };
        let shared = self.fetches.load(Ordering::Acquire) != seen;
        if shared || fetched.at.is_some_and(|at| at.elapsed() < self.refetch) {
            return Err(if fetched.failed {
                "the issuer's keys cannot be fetched".to_owned()
            } else {
                unknown()
            });
        }
        if let Err(e) = self.fetch_keys(&mut fetched).await {
            tracing::warn!("{e}");
            return Err("the issuer's keys cannot be fetched".to_owned());
        }
        find(&self.keys(), kid, alg).ok_or_else(unknown)
    }

    fn keys(&self) -> Arc<JwkSet> {
        self.keys.read().clone()
    }

    /// Fetches the JWKS (discovering its URL first, once) into the cache, noting when it
    /// ended and whether it failed.
    async fn fetch_keys(&self, fetched: &mut Fetched) -> Result<(), OAuthError> {
        let outcome = self.fetch_set(fetched).await;
        fetched.at = Some(Instant::now());
        fetched.failed = outcome.is_err();
        self.fetches
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        outcome
    }

    async fn fetch_set(&self, fetched: &mut Fetched) -> Result<(), OAuthError> {
        let jwks_uri = match &fetched.jwks_uri {
            Some(uri) => uri.clone(),
            None => {
                let uri = self.discover().await?;
                fetched.jwks_uri = Some(uri.clone());
                uri
            }
        };
        let document = match self.get_json(&jwks_uri).await {
            Ok(document) => document,
            Err(why) => {
                // Found again next time: the issuer may have moved its keys.
                fetched.jwks_uri = None;
                return Err(self.discovery_error(format!(
                    "its JWKS {}: {why}",
                    switchboard::redact_url(jwks_uri.as_str())
                )));
            }
        };
        let set: JwkSet = serde_json::from_value(document).map_err(|e| {
            self.discovery_error(format!(
                "its JWKS {} is not a JWK set: {e}",
                switchboard::redact_url(jwks_uri.as_str())
            ))
        })?;
        tracing::debug!("the issuer's JWKS holds {} keys", set.keys.len());
        *self.keys.write() = Arc::new(set);
        Ok(())
    }

    /// The `jwks_uri` of the issuer's metadata (RFC 8414, then OpenID Connect Discovery).
    async fn discover(&self) -> Result<Url, OAuthError> {
        let issuer =
            Url::parse(&self.options.issuer).map_err(|e| self.discovery_error(e.to_string()))?;
        let mut tried = Vec::new();
        for url in metadata_urls(&issuer) {
            let document = match self.get_json(&url).await {
                Ok(document) => document,
                Err(why) => {
                    tried.push(format!("{}: {why}", url.path()));
                    continue;
                }
            };
            let named = document.get("issuer").and_then(Value::as_str).unwrap_or("");
            if named.trim_end_matches('/') != self.options.issuer.trim_end_matches('/') {
                return Err(self.discovery_error(format!(
                    "its metadata {} names another issuer, `{named}`",
                    url.path()
                )));
            }
            if named != self.options.issuer {
                let mut issuers = self.issuers.write();
                if !issuers.iter().any(|i| i == named) {
                    issuers.push(named.to_owned());
                }
            }
            let Some(jwks_uri) = document.get("jwks_uri").and_then(Value::as_str) else {
                return Err(
                    self.discovery_error(format!("its metadata {} has no `jwks_uri`", url.path()))
                );
            };
            let jwks_uri = issuer
                .join(jwks_uri)
                .map_err(|e| self.discovery_error(format!("its metadata's `jwks_uri`: {e}")))?;
            if jwks_uri.scheme() != "https" && !is_loopback(&jwks_uri) {
                return Err(self.discovery_error(
                    "its `jwks_uri` must be https (http only on a loopback address)".to_owned(),
                ));
            }
            return Ok(jwks_uri);
        }
        Err(self.discovery_error(format!("no metadata found ({})", tried.join("; "))))
    }

    async fn get_json(&self, url: &Url) -> Result<Value, String> {
        let response = self
            .client
            .get(url.clone())
            .timeout(self.fetch_timeout)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(describe)?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("HTTP {}", status.as_u16()));
        }
        if response
            .content_length()
            .is_some_and(|n| n > MAX_DOCUMENT as u64)
        {
            return Err(format!("larger than {MAX_DOCUMENT} bytes"));
        }
        let bytes = response.bytes().await.map_err(describe)?;
        if bytes.len() > MAX_DOCUMENT {
            return Err(format!("larger than {MAX_DOCUMENT} bytes"));
        }
        serde_json::from_slice(&bytes).map_err(|e| format!("not JSON: {e}"))
    }

    fn discovery_error(&self, why: String) -> OAuthError {
        OAuthError::Discovery {
            issuer: switchboard::redact_url(&self.options.issuer),
            why,
        }
    }

    /// The protected resource metadata (RFC 9728).
    pub fn metadata(&self) -> Value {
        let mut document = json!({
            "resource": self.options.audience,
            "authorization_servers": [self.options.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "Switchboard",
        });
        if !self.scopes.is_empty() {
            document["scopes_supported"] = json!(self.scopes);
        }
        document
    }

    /// The URL of the metadata for a request that came with `host` (its `Host` header).
    pub fn metadata_url(&self, host: Option<&str>) -> String {
        if let Ok(audience) = Url::parse(&self.options.audience)
            && matches!(audience.scheme(), "http" | "https")
            && let Some(authority) = audience.host_str()
        {
            let port = audience.port().map(|p| format!(":{p}")).unwrap_or_default();
            let path = audience.path().trim_end_matches('/');
            return format!(
                "{}://{authority}{port}{METADATA_PATH}{path}",
                audience.scheme()
            );
        }
        format!(
            "http://{}{METADATA_PATH}{}",
            host.unwrap_or("127.0.0.1"),
            crate::http::MCP_PATH
        )
    }

    /// The `WWW-Authenticate` value of a 401: where the metadata is, the scopes the tool
    /// rules name (2025-11-25 asks for `scope`), and why a token sent was refused.
    pub fn challenge(&self, host: Option<&str>, refused: Option<&str>) -> String {
        let quotable = |text: &str| -> String {
            text.chars()
                .filter(|c| !matches!(c, '"' | '\\') && (' '..='~').contains(c))
                .collect()
        };
        let mut challenge = format!(r#"Bearer resource_metadata="{}""#, self.metadata_url(host));
        if !self.scopes.is_empty() {
            challenge.push_str(&format!(
                r#", scope="{}""#,
                quotable(&self.scopes.join(" "))
            ));
        }
        if let Some(why) = refused {
            let why = quotable(why);
            challenge.push_str(&format!(
                r#", error="invalid_token", error_description="{why}""#
            ));
        }
        challenge
    }
}

/// The key of a JWK set a token of `alg` naming `kid` is checked with.
fn find(set: &JwkSet, kid: Option<&str>, alg: Algorithm) -> Option<Jwk> {
    let fits = |jwk: &&Jwk| {
        matches!(
            (&jwk.algorithm, alg),
            (
                AlgorithmParameters::RSA(_),
                Algorithm::RS256
                    | Algorithm::RS384
                    | Algorithm::RS512
                    | Algorithm::PS256
                    | Algorithm::PS384
                    | Algorithm::PS512
            ) | (
                AlgorithmParameters::EllipticCurve(_),
                Algorithm::ES256 | Algorithm::ES384
            ) | (AlgorithmParameters::OctetKeyPair(_), Algorithm::EdDSA)
        )
    };
    match kid {
        Some(kid) => set
            .keys
            .iter()
            .filter(fits)
            .find(|jwk| jwk.common.key_id.as_deref() == Some(kid))
            .cloned(),
        None => {
            let mut candidates = set.keys.iter().filter(fits);
            let one = candidates.next()?;
            candidates.next().is_none().then(|| one.clone())
        }
    }
}

/// Why jsonwebtoken refused a token, in words for the client.
fn refusal(e: &jsonwebtoken::errors::Error) -> String {
    use jsonwebtoken::errors::ErrorKind;
    match e.kind() {
        ErrorKind::ExpiredSignature => "the token has expired".to_owned(),
        ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)".to_owned(),
        ErrorKind::InvalidAudience => "the token is for another audience".to_owned(),
        ErrorKind::InvalidIssuer => "the token is from another issuer".to_owned(),
        ErrorKind::InvalidSignature => "the token's signature is wrong".to_owned(),
        ErrorKind::MissingRequiredClaim(claim) => format!("the token has no `{claim}`"),
        ErrorKind::InvalidAlgorithm => "the token's algorithm does not fit its key".to_owned(),
        _ => format!("the token is refused: {e}"),
    }
}

/// A token's scopes: `scope` (space-separated, RFC 9068) or `scp` (an array, or a string).
fn scopes(claims: &Value) -> Vec<String> {
    let split = |s: &str| s.split_whitespace().map(str::to_owned).collect();
    match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(s)), _) => split(s),
        (_, Some(Value::Array(items))) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        (_, Some(Value::String(s))) => split(s),
        _ => Vec::new(),
    }
}

/// Where an issuer's metadata may be: RFC 8414's path-inserted form, then OpenID Connect's
/// (inserted, then appended), as the MCP authorization spec lists them.
fn metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let at = |p: String| {
        let mut url = issuer.clone();
        url.set_path(&p);
        url
    };
    if path.is_empty() {
        vec![
            at("/.well-known/oauth-authorization-server".to_owned()),
            at("/.well-known/openid-configuration".to_owned()),
        ]
    } else {
        vec![
            at(format!("/.well-known/oauth-authorization-server{path}")),
            at(format!("/.well-known/openid-configuration{path}")),
            at(format!("{path}/.well-known/openid-configuration")),
        ]
    }
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// A reqwest error without its URL.
fn describe(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A resource server whose cache holds `keys`, fetched just now (so nothing is fetched).
    async fn with_keys(keys: Vec<Jwk>) -> ResourceServer {
        let server = ResourceServer::new(
            OAuthOptions {
                issuer: "https://auth.example.com".to_owned(),
                audience: "https://mcp.example.com/mcp".to_owned(),
            },
            Vec::new(),
        )
        .unwrap();
        *server.keys.write() = Arc::new(JwkSet { keys });
        server.fetch.lock().await.at = Some(Instant::now());
        server
    }

    fn claims(aud: &str) -> Value {
        let now = jsonwebtoken::get_current_timestamp();
        json!({"iss": "https://auth.example.com", "aud": aud, "sub": "alice",
               "scp": ["read", "write"], "iat": now, "exp": now + 60})
    }

    /// RS256 (a throwaway 2048-bit key, PKCS#1 DER, made for this test), with and without a
    /// `kid`; a shared-secret algorithm is never accepted.
    #[tokio::test]
    async fn rs256_tokens_are_checked_and_hmac_ones_refused() {
        use jsonwebtoken::{EncodingKey, Header};
        let key = EncodingKey::from_rsa_der(include_bytes!("../tests/fixtures/rs256-test-key.der"));
        let mut jwk = Jwk::from_encoding_key(&key, Algorithm::RS256).unwrap();
        jwk.common.key_id = Some("rsa-1".to_owned());
        let server = with_keys(vec![jwk]).await;
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some("rsa-1".to_owned());
        let token =
            jsonwebtoken::encode(&header, &claims("https://mcp.example.com/mcp"), &key).unwrap();
        let identity = server.verify(&token).await.unwrap();
        assert_eq!(identity.subject, "alice");
        assert_eq!(identity.scopes, ["read", "write"]);
        // No kid: the one RSA key.
        let bare = jsonwebtoken::encode(
            &Header::new(Algorithm::RS256),
            &claims("https://mcp.example.com/mcp"),
            &key,
        )
        .unwrap();
        assert!(server.verify(&bare).await.is_ok());
        let foreign =
            jsonwebtoken::encode(&header, &claims("https://other.example/mcp"), &key).unwrap();
        assert_eq!(
            server.verify(&foreign).await.unwrap_err(),
            "the token is for another audience"
        );
        let mut hmac = Header::new(Algorithm::HS256);
        hmac.kid = Some("rsa-1".to_owned());
        let secret = EncodingKey::from_secret(b"anyone who reads the JWKS").unwrap();
        let forged =
            jsonwebtoken::encode(&hmac, &claims("https://mcp.example.com/mcp"), &secret).unwrap();
        assert!(
            server
                .verify(&forged)
                .await
                .unwrap_err()
                .contains("algorithm"),
        );
    }

    #[test]
    fn scopes_come_from_scope_or_scp() {
        assert_eq!(scopes(&json!({"scope": "a b"})), ["a", "b"]);
        assert_eq!(scopes(&json!({"scp": ["a", "b"]})), ["a", "b"]);
        assert_eq!(scopes(&json!({"scp": "a"})), ["a"]);
        assert!(scopes(&json!({})).is_empty());
    }

    #[test]
    fn metadata_is_looked_for_where_the_spec_says() {
        let urls = |issuer: &str| -> Vec<String> {
            metadata_urls(&Url::parse(issuer).unwrap())
                .into_iter()
                .map(String::from)
                .collect()
        };
        assert_eq!(
            urls("https://auth.example.com"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            urls("https://auth.example.com/tenant1/"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn the_metadata_url_follows_the_audience_and_an_issuer_must_be_safe() {
        let server = |audience: &str| {
            ResourceServer::new(
                OAuthOptions {
                    issuer: "https://auth.example.com".to_owned(),
                    audience: audience.to_owned(),
                },
                Vec::new(),
            )
            .unwrap()
        };
        assert_eq!(
            server("https://mcp.example.com/mcp").metadata_url(Some("10.0.0.1:8080")),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            server("api://switchboard").metadata_url(Some("127.0.0.1:9")),
            "http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp"
        );
        let challenge = server("https://mcp.example.com/mcp")
            .challenge(None, Some("the token \"x\" has expired"));
        assert_eq!(
            challenge,
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", error="invalid_token", error_description="the token x has expired""#
        );
        let mut scoped = server("https://mcp.example.com/mcp");
        scoped.set_scopes(vec!["read".to_owned(), "admin".to_owned()]);
        assert_eq!(
            scoped.challenge(None, None),
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="read admin""#
        );
        for issuer in [
            "http://auth.example.com",
            "https://a.example/?x=1",
            "not a url",
        ] {
            let made = ResourceServer::new(
                OAuthOptions {
                    issuer: issuer.to_owned(),
                    audience: "https://mcp.example.com/mcp".to_owned(),
                },
                Vec::new(),
            );
            assert!(matches!(made, Err(OAuthError::Issuer { .. })), "{issuer}");
        }
    }
}
