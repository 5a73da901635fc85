//! `--oauth`: a real OAuth 2.1 authorization server on the same origin as the MCP endpoint,
//! and the resource server's guard in front of it (`/mcp`; with `--transport sse`, `/sse` and
//! its `/message` endpoint).
//!
//! - `/.well-known/oauth-protected-resource/mcp` (`…/sse`; RFC 9728) and
//!   `/.well-known/oauth-authorization-server` (RFC 8414; `--oauth-issuer` / `--oauth-resource`
//!   make them lie, for the refusal tests).
//! - `POST /register` (RFC 7591), `GET /authorize` (answers at once with a redirect carrying
//!   the code, `state` and `iss`), `POST /token` (authorization_code with PKCE S256 checked,
//!   refresh_token with rotation: a spent refresh token is refused and `oauth: refresh token
//!   reused` goes to stderr), `POST /revoke` (RFC 7009), `POST /test/revoke-all`,
//!   `POST /test/expire-access`.
//! - The endpoint wants a live access token (401 with `resource_metadata` and `scope` otherwise);
//!   `--oauth-tool-scope TOOL=SCOPE` answers a call of TOOL without SCOPE with 403
//!   `insufficient_scope`.
//!
//! - `--oauth-dpop`: DPoP (RFC 9449). The metadata offers ES256; a token request needs a
//!   valid proof (`typ`, signature by its own `jwk`, `htm`, `htu`, a fresh `jti`, `iat`) and
//!   the nonce (first answered 400 `use_dpop_nonce` with `DPoP-Nonce`); tokens are `DPoP`
//!   and bound to the proof key's thumbprint (a refresh needs the same key); the endpoint
//!   wants `Authorization: DPoP` and a proof of that request with `ath` and the nonce (first
//!   answered 401 `use_dpop_nonce`). A refused proof is `oauth: dpop proof refused: WHY`.
//!
//! - `--oauth-jwt`: access tokens are JWTs signed with an ES256 key made at start (`kid`
//!   random), published at `/jwks` and named by the metadata's `jwks_uri`; claims `iss` (the
//!   issuer), `aud` (the `resource` asked for, else the protected resource), `sub` (the client
//!   id, or `user` for the authorization-code grant), `scope`, `iat`, `exp`, `jti`. The token
//!   endpoint also takes `client_credentials` (any `client_id`; `scope`, `resource`), and
//!   `POST /test/mint` (JSON `{"sub", "scope", "aud", "expiresIn", "forged"}`, every field
//!   optional) signs a token of any claims: `expiresIn` may be negative (an expired token),
//!   `forged: true` signs with another key under the published `kid`. `POST /test/rotate-key`
//!   signs with a new key (a new `kid`) from then on, published beside the old; each JWKS
//!   fetch is `oauth: served the JWKS` on stderr.
//! - `--oauth-refresh-delay-ms MS`: a refresh is answered after MS (`oauth: refresh requested`
//!   when it arrives), so two clients refreshing at once overlap.
//!
//! - RFC 8693 token exchange: an access token this server issued (and still honours) as the
//!   `subject_token` gets one of the same subject for the `resource` asked for (no refresh
//!   token; `oauth: exchanged a token for sub …`).
//! - The authorize endpoint's `login_hint` is who logs in: the subject of the tokens that
//!   grant gets (`user` without one). The guard hands the subject of the token a request
//!   carried to the MCP server in the `x-testkit-subject` header (`--oauth-whoami`'s tool
//!   answers it).
//!
//! stderr gets one line per event (`oauth: issued …`, `oauth: refreshed …`), never a token.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::Uri;
use axum::http::header::CONTENT_TYPE;
use axum::http::header::{AUTHORIZATION, HOST, LOCATION, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use crate::options::Options;

const BODY_LIMIT: usize = 1024 * 1024;

#[derive(Debug)]
struct Config {
    token_ttl: Duration,
    issuer: Option<String>,
    resource: Option<String>,
    no_pkce: bool,
    /// `--oauth-no-metadata`.
    no_metadata: bool,
    tool_scope: Option<(String, String)>,
    /// The protected endpoint's path: `/mcp`, or `/sse` for the legacy transport.
    path: &'static str,
    dpop: bool,
    /// `--oauth-refresh-delay-ms`.
    refresh_delay: Duration,
    /// `--oauth-jwt`: the key JWT access tokens are signed with.
    jwt: Option<Signer>,
}

/// The keys of `--oauth-jwt`: those published (tokens are signed with the newest), and one
/// that signs forged tokens.
struct Signer {
    /// `(kid, key, public JWK)`, oldest first.
    keys: Mutex<Vec<(String, jsonwebtoken::EncodingKey, jsonwebtoken::jwk::Jwk)>>,
    forged: jsonwebtoken::EncodingKey,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer").finish_non_exhaustive()
    }
}

impl Signer {
    fn new() -> Result<Signer, String> {
        let signer = Signer {
            keys: Mutex::default(),
            forged: p256_key()?,
        };
        signer.rotate()?;
        Ok(signer)
    }

    /// A new signing key (a new random `kid`), published beside the old ones.
    fn rotate(&self) -> Result<String, String> {
        use jsonwebtoken::Algorithm;
        use jsonwebtoken::jwk::{Jwk, KeyAlgorithm, PublicKeyUse};
        let key = p256_key()?;
        let mut id = [0u8; 6];
        getrandom::fill(&mut id).map_err(|e| e.to_string())?;
        let kid = format!("testkit-{}", URL_SAFE_NO_PAD.encode(id));
        let mut jwk = Jwk::from_encoding_key(&key, Algorithm::ES256).map_err(|e| e.to_string())?;
        jwk.common.key_id = Some(kid.clone());
        jwk.common.public_key_use = Some(PublicKeyUse::Signature);
        jwk.common.key_algorithm = Some(KeyAlgorithm::ES256);
        self.keys.lock().push((kid.clone(), key, jwk));
        Ok(kid)
    }

    /// `{"keys": [every public key as a JWK]}`.
    fn jwks(&self) -> Value {
        let keys = self.keys.lock();
        json!({ "keys": keys.iter().map(|(_, _, jwk)| jwk).collect::<Vec<_>>() })
    }

    /// A signed JWT of `claims` under the newest `kid` (by the forged key when `forged`).
    fn sign(&self, claims: &Value, forged: bool) -> Result<String, String> {
        let keys = self.keys.lock();
        let (kid, key, _) = keys.last().ok_or("no signing key")?;
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        header.kid = Some(kid.clone());
        header.typ = Some("at+jwt".to_owned());
        let key = if forged { &self.forged } else { key };
        jsonwebtoken::encode(&header, claims, key).map_err(|e| e.to_string())
    }
}

/// A new random P-256 key.
fn p256_key() -> Result<jsonwebtoken::EncodingKey, String> {
    use p256::pkcs8::EncodePrivateKey;
    // A random 32-byte string is a valid scalar but for odds of about 2^-32.
    for _ in 0..4 {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| e.to_string())?;
        if let Ok(key) = p256::ecdsa::SigningKey::from_slice(&bytes) {
            let der = key.to_pkcs8_der().map_err(|e| e.to_string())?;
            return Ok(jsonwebtoken::EncodingKey::from_ec_der(der.as_bytes()));
        }
    }
    Err("cannot make a P-256 key".to_owned())
}

/// Who and what a JWT access token is for.
struct Subject<'a> {
    issuer: &'a str,
    audience: &'a str,
    sub: &'a str,
}

/// The nonce both ends of `--oauth-dpop` want in proofs.
const DPOP_NONCE: &str = "testkit-dpop-nonce";

/// RFC 8693's grant type and token type.
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";

/// The request header in which the guard names the subject of the token a request carried.
pub(crate) const SUBJECT_HEADER: &str = "x-testkit-subject";

#[derive(Debug)]
struct Grant {
    challenge: String,
    scope: String,
    redirect_uri: String,
    /// The `login_hint`: who logged in.
    sub: String,
}

#[derive(Debug)]
struct Access {
    /// The subject the token was issued to.
    sub: String,
    scope: String,
    expires: Instant,
    /// The thumbprint of the DPoP key the token is bound to.
    jkt: Option<String>,
}

#[derive(Debug, Default)]
struct Books {
    counter: u64,
    codes: HashMap<String, Grant>,
    access: HashMap<String, Access>,
    /// Live refresh tokens: their scope, DPoP key thumbprint and subject.
    refresh: HashMap<String, (String, Option<String>, String)>,
    /// DPoP proof ids seen (a replay is refused).
    jtis: std::collections::HashSet<String>,
    /// Rotated-away refresh tokens: presenting one again is a reuse.
    spent: std::collections::HashSet<String>,
}

#[derive(Debug)]
struct Server {
    config: Config,
    books: Mutex<Books>,
}

impl Server {
    fn books(&self) -> parking_lot::MutexGuard<'_, Books> {
        self.books.lock()
    }
}

fn fresh(books: &mut Books, kind: &str) -> String {
    books.counter += 1;
    let mut bytes = [0u8; 12];
    // Without randomness the counter alone keeps tokens apart.
    let _ = getrandom::fill(&mut bytes);
    format!(
        "{kind}-{}-{}",
        books.counter,
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    )
}

/// The origin requests came to, from the `Host` header.
fn base(headers: &HeaderMap) -> String {
    let host = headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    format!("http://{host}")
}

/// The authorize endpoint under `--oauth-no-metadata`.
pub(crate) const NO_METADATA_AUTHORIZE: &str = "/tenant/oauth2/v2.0/authorize";
/// The token endpoint under `--oauth-no-metadata`.
pub(crate) const NO_METADATA_TOKEN: &str = "/tenant/oauth2/v2.0/token";

/// Guards every route of `mcp`; `path` is the endpoint the resource metadata names.
pub(crate) fn protect(mcp: Router, options: &Options, path: &'static str) -> Router {
    let server = Arc::new(Server {
        config: Config {
            token_ttl: Duration::from_secs(options.oauth_token_ttl),
            issuer: options.oauth_issuer.clone(),
            resource: options.oauth_resource.clone(),
            no_pkce: options.oauth_no_pkce,
            no_metadata: options.oauth_no_metadata,
            tool_scope: options
                .oauth_tool_scope
                .as_deref()
                .and_then(|s| s.split_once('='))
                .map(|(t, s)| (t.to_owned(), s.to_owned())),
            path,
            dpop: options.oauth_dpop,
            jwt: options.oauth_jwt.then(|| match Signer::new() {
                Ok(signer) => signer,
                Err(e) => {
                    eprintln!("oauth: cannot make the JWT signing key: {e}");
                    std::process::exit(2);
                }
            }),
            refresh_delay: Duration::from_millis(options.oauth_refresh_delay_ms),
        },
        books: Mutex::default(),
    });
    let guarded = mcp.layer(axum::middleware::from_fn_with_state(server.clone(), guard));
    let auth = if options.oauth_no_metadata {
        Router::new()
            .route(NO_METADATA_AUTHORIZE, get(authorize))
            .route(NO_METADATA_TOKEN, post(token))
    } else {
        Router::new()
            .route(
                &format!("/.well-known/oauth-protected-resource{path}"),
                get(resource_metadata),
            )
            .route(
                "/.well-known/oauth-authorization-server",
                get(server_metadata),
            )
            .route("/register", post(register))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
    };
    let auth = auth
        .route("/revoke", post(revoke))
        .route("/test/revoke-all", post(revoke_all))
        .route("/test/expire-access", post(expire_access))
        .route("/jwks", get(jwks))
        .route("/test/mint", post(mint))
        .route("/test/rotate-key", post(rotate_key))
        .with_state(server);
    guarded.merge(auth)
}

async fn resource_metadata(State(server): State<Arc<Server>>, headers: HeaderMap) -> Response {
    let base = base(&headers);
    let resource = server
        .config
        .resource
        .clone()
        .unwrap_or_else(|| format!("{base}{}", server.config.path));
    json_response(
        StatusCode::OK,
        json!({
            "resource": resource,
            "authorization_servers": [base],
            "scopes_supported": ["mcp"],
            "bearer_methods_supported": ["header"],
        }),
    )
}

async fn server_metadata(State(server): State<Arc<Server>>, headers: HeaderMap) -> Response {
    let base = base(&headers);
    let issuer = server.config.issuer.clone().unwrap_or_else(|| base.clone());
    let mut metadata = server_metadata_json(&base, &issuer);
    if let Some(object) = metadata.as_object_mut() {
        if server.config.no_pkce {
            object.remove("code_challenge_methods_supported");
        }
        if server.config.dpop {
            object.insert(
                "dpop_signing_alg_values_supported".to_owned(),
                json!(["ES256"]),
            );
        }
        if server.config.jwt.is_some() {
            object.insert("jwks_uri".to_owned(), json!(format!("{base}/jwks")));
            object.insert(
                "grant_types_supported".to_owned(),
                json!([
                    "authorization_code",
                    "refresh_token",
                    "client_credentials",
                    TOKEN_EXCHANGE
                ]),
            );
        }
    }
    json_response(StatusCode::OK, metadata)
}

fn server_metadata_json(base: &str, issuer: &str) -> Value {
    json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{base}/authorize"),
            "token_endpoint": format!("{base}/token"),
            "registration_endpoint": format!("{base}/register"),
            "revocation_endpoint": format!("{base}/revoke"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "scopes_supported": ["mcp", "admin"],
            "authorization_response_iss_parameter_supported": true,
    })
}

async fn register(State(server): State<Arc<Server>>, body: axum::body::Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    let client_id = fresh(&mut server.books(), "client");
    eprintln!("oauth: registered a client");
    json_response(
        StatusCode::CREATED,
        json!({
            "client_id": client_id,
            "redirect_uris": request.get("redirect_uris").cloned().unwrap_or(json!([])),
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
        }),
    )
}

async fn authorize(State(server): State<Arc<Server>>, headers: HeaderMap, uri: Uri) -> Response {
    let query: HashMap<String, String> =
        url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
            .into_owned()
            .collect();
    let Some(redirect_uri) = query.get("redirect_uri").cloned() else {
        return (StatusCode::BAD_REQUEST, "no redirect_uri\n").into_response();
    };
    if query.get("code_challenge_method").map(String::as_str) != Some("S256") {
        return (StatusCode::BAD_REQUEST, "PKCE S256 required\n").into_response();
    }
    let mut books = server.books();
    let code = fresh(&mut books, "code");
    books.codes.insert(
        code.clone(),
        Grant {
            challenge: query.get("code_challenge").cloned().unwrap_or_default(),
            scope: query
                .get("scope")
                .cloned()
                .unwrap_or_else(|| "mcp".to_owned()),
            redirect_uri: redirect_uri.clone(),
            sub: query
                .get("login_hint")
                .cloned()
                .unwrap_or_else(|| "user".to_owned()),
        },
    );
    drop(books);
    eprintln!(
        "oauth: authorize scope={:?} resource={:?}",
        query.get("scope").map(String::as_str).unwrap_or(""),
        query.get("resource").map(String::as_str).unwrap_or("")
    );
    let issuer = server
        .config
        .issuer
        .clone()
        .unwrap_or_else(|| base(&headers));
    let Ok(mut location) = url::Url::parse(&redirect_uri) else {
        return (StatusCode::BAD_REQUEST, "bad redirect_uri\n").into_response();
    };
    location.query_pairs_mut().append_pair("code", &code);
    // Without metadata nothing promised an `iss` (RFC 9207), and as Entra none is sent.
    if !server.config.no_metadata {
        location.query_pairs_mut().append_pair("iss", &issuer);
    }
    if let Some(state) = query.get("state") {
        location.query_pairs_mut().append_pair("state", state);
    }
    (StatusCode::FOUND, [(LOCATION, location.to_string())]).into_response()
}

fn token_error(code: &str, description: &str) -> Response {
    json_response(
        StatusCode::BAD_REQUEST,
        json!({"error": code, "error_description": description}),
    )
}

fn issue(
    server: &Server,
    books: &mut Books,
    scope: &str,
    jkt: Option<String>,
    subject: &Subject<'_>,
) -> Value {
    let access = match &server.config.jwt {
        Some(signer) => {
            let jti = fresh(books, "jti");
            let claims = jwt_claims(
                subject,
                scope,
                server.config.token_ttl.as_secs() as i64,
                &jti,
            );
            match signer.sign(&claims, false) {
                Ok(token) => token,
                Err(e) => return json!({"error": "server_error", "error_description": e}),
            }
        }
        None => fresh(books, "at"),
    };
    let refresh = fresh(books, "rt");
    let token_type = if jkt.is_some() { "DPoP" } else { "Bearer" };
    books.access.insert(
        access.clone(),
        Access {
            sub: subject.sub.to_owned(),
            scope: scope.to_owned(),
            expires: Instant::now() + server.config.token_ttl,
            jkt: jkt.clone(),
        },
    );
    books.refresh.insert(
        refresh.clone(),
        (scope.to_owned(), jkt, subject.sub.to_owned()),
    );
    json!({
        "access_token": access,
        "token_type": token_type,
        "expires_in": server.config.token_ttl.as_secs(),
        "refresh_token": refresh,
        "scope": scope,
    })
}

async fn token(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let form: HashMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
    if form.get("grant_type").map(String::as_str) == Some("refresh_token")
        && !server.config.refresh_delay.is_zero()
    {
        eprintln!("oauth: refresh requested");
        tokio::time::sleep(server.config.refresh_delay).await;
    }
    let mut books = server.books();
    let jkt = if server.config.dpop {
        let url = format!("{}/token", base(&headers));
        match check_proof(&headers, "POST", &url, None, &mut books) {
            Err(why) => {
                eprintln!("oauth: dpop proof refused: {why}");
                return token_error("invalid_dpop_proof", &why);
            }
            Ok((_, nonce)) if nonce.as_deref() != Some(DPOP_NONCE) => {
                eprintln!("oauth: use_dpop_nonce at the token endpoint");
                let mut response = token_error("use_dpop_nonce", "a nonce is required");
                response.headers_mut().insert(
                    "dpop-nonce",
                    axum::http::HeaderValue::from_static(DPOP_NONCE),
                );
                return response;
            }
            Ok((jkt, _)) => Some(jkt),
        }
    } else {
        None
    };
    let base = base(&headers);
    let issuer = server.config.issuer.clone().unwrap_or_else(|| base.clone());
    eprintln!(
        "oauth: token grant={:?} resource={:?}",
        form.get("grant_type").map(String::as_str).unwrap_or(""),
        form.get("resource").map(String::as_str).unwrap_or("")
    );
    let resource = form
        .get("resource")
        .cloned()
        .unwrap_or_else(|| protected_resource(&server, &base));
    let mut subject = Subject {
        issuer: &issuer,
        audience: &resource,
        sub: "user",
    };
    match form.get("grant_type").map(String::as_str) {
        Some("authorization_code") => {
            let Some(grant) = form.get("code").and_then(|c| books.codes.remove(c)) else {
                return token_error("invalid_grant", "unknown or used code");
            };
            let verifier = form.get("code_verifier").cloned().unwrap_or_default();
            let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(sha256(verifier.as_bytes()));
            if computed != grant.challenge {
                return token_error("invalid_grant", "PKCE verification failed");
            }
            if form.get("redirect_uri") != Some(&grant.redirect_uri) {
                return token_error("invalid_grant", "redirect_uri differs");
            }
            subject.sub = &grant.sub;
            let answer = issue(&server, &mut books, &grant.scope, jkt, &subject);
            eprintln!("oauth: issued tokens for scope {:?}", grant.scope);
            json_response(StatusCode::OK, answer)
        }
        Some("refresh_token") => {
            let presented = form.get("refresh_token").cloned().unwrap_or_default();
            if books.spent.contains(&presented) {
                eprintln!("oauth: refresh token reused");
                return token_error("invalid_grant", "refresh token already used");
            }
            let Some((scope, bound, sub)) = books.refresh.remove(&presented) else {
                eprintln!("oauth: unknown refresh token");
                return token_error("invalid_grant", "refresh token revoked or unknown");
            };
            if bound != jkt {
                eprintln!("oauth: dpop proof refused: the refresh token is bound to another key");
                return token_error("invalid_grant", "refresh token bound to another key");
            }
            books.spent.insert(presented);
            subject.sub = &sub;
            let answer = issue(&server, &mut books, &scope, jkt, &subject);
            eprintln!("oauth: refreshed");
            json_response(StatusCode::OK, answer)
        }
        Some("client_credentials") if server.config.jwt.is_some() => {
            let Some(client) = form.get("client_id").filter(|c| !c.is_empty()) else {
                return token_error("invalid_client", "no client_id");
            };
            subject.sub = client;
            let scope = form.get("scope").map_or("mcp", String::as_str);
            let answer = issue(&server, &mut books, scope, jkt, &subject);
            eprintln!("oauth: issued a client-credentials token for scope {scope:?}");
            json_response(StatusCode::OK, answer)
        }
        // RFC 8693: an access token this server issued and still honours (the gateway's
        // identity provider is this server) for one of the same subject, for the resource.
        Some(TOKEN_EXCHANGE) => {
            let presented = form.get("subject_token").cloned().unwrap_or_default();
            let live = books
                .access
                .get(&presented)
                .filter(|a| a.expires > Instant::now())
                .map(|a| a.sub.clone());
            let Some(sub) = live else {
                eprintln!("oauth: a token exchange refused: unknown or expired subject token");
                return token_error("invalid_grant", "the subject token is not one of ours");
            };
            if form.get("subject_token_type").map(String::as_str) != Some(ACCESS_TOKEN_TYPE) {
                return token_error("invalid_request", "subject_token_type must be access_token");
            }
            subject.sub = &sub;
            let scope = form.get("scope").map_or("mcp", String::as_str);
            let mut answer = issue(&server, &mut books, scope, jkt, &subject);
            if let Some(object) = answer.as_object_mut() {
                object.remove("refresh_token");
                object.insert("issued_token_type".to_owned(), json!(ACCESS_TOKEN_TYPE));
            }
            eprintln!("oauth: exchanged a token for sub {sub:?}");
            json_response(StatusCode::OK, answer)
        }
        _ => token_error(
            "unsupported_grant_type",
            "use authorization_code or refresh_token",
        ),
    }
}

/// The resource the metadata names: `--oauth-resource`, else the endpoint on this origin.
fn protected_resource(server: &Server, base: &str) -> String {
    server
        .config
        .resource
        .clone()
        .unwrap_or_else(|| format!("{base}{}", server.config.path))
}

/// The claims of an access token for `subject` with `scope`, expiring in `expires_in` seconds
/// (negative: expired already).
fn jwt_claims(subject: &Subject<'_>, scope: &str, expires_in: i64, jti: &str) -> Value {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    json!({
        "iss": subject.issuer,
        "aud": subject.audience,
        "sub": subject.sub,
        "scope": scope,
        "iat": now.min(now + expires_in),
        "exp": now + expires_in,
        "jti": jti,
    })
}

/// `GET /jwks`: the public key access tokens are signed with (`--oauth-jwt`).
async fn jwks(State(server): State<Arc<Server>>) -> Response {
    match &server.config.jwt {
        Some(signer) => {
            eprintln!("oauth: served the JWKS");
            json_response(StatusCode::OK, signer.jwks())
        }
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// `POST /test/mint`: a JWT access token of the claims asked for (`--oauth-jwt`):
/// `{"sub", "scope", "aud", "expiresIn", "forged"}`, each optional.
async fn mint(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let Some(signer) = &server.config.jwt else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let asked: Value = serde_json::from_slice(&body).unwrap_or_default();
    let text = |key: &str| asked.get(key).and_then(Value::as_str).map(str::to_owned);
    let base = base(&headers);
    let issuer = server.config.issuer.clone().unwrap_or_else(|| base.clone());
    let audience = text("aud").unwrap_or_else(|| protected_resource(&server, &base));
    let sub = text("sub").unwrap_or_else(|| "user".to_owned());
    let scope = text("scope").unwrap_or_else(|| "mcp".to_owned());
    let expires_in = asked
        .get("expiresIn")
        .and_then(Value::as_i64)
        .unwrap_or(server.config.token_ttl.as_secs() as i64);
    let forged = asked.get("forged").and_then(Value::as_bool) == Some(true);
    let jti = fresh(&mut server.books(), "jti");
    let subject = Subject {
        issuer: &issuer,
        audience: &audience,
        sub: &sub,
    };
    let claims = jwt_claims(&subject, &scope, expires_in, &jti);
    match signer.sign(&claims, forged) {
        Ok(token) => {
            eprintln!("oauth: minted a token for sub {sub:?} scope {scope:?}");
            json_response(
                StatusCode::OK,
                json!({"access_token": token, "token_type": "Bearer"}),
            )
        }
        Err(e) => json_response(StatusCode::INTERNAL_SERVER_ERROR, json!({"error": e})),
    }
}

/// `POST /test/rotate-key`: tokens are signed with a new key from now on (`--oauth-jwt`);
/// the JWKS publishes it beside the old ones.
async fn rotate_key(State(server): State<Arc<Server>>) -> Response {
    let Some(signer) = &server.config.jwt else {
        return StatusCode::NOT_FOUND.into_response();
    };
    match signer.rotate() {
        Ok(kid) => {
            eprintln!("oauth: rotated the signing key");
            json_response(StatusCode::OK, json!({ "kid": kid }))
        }
        Err(e) => json_response(StatusCode::INTERNAL_SERVER_ERROR, json!({"error": e})),
    }
}

async fn revoke(State(server): State<Arc<Server>>, body: axum::body::Bytes) -> Response {
    let form: HashMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
    if let Some(token) = form.get("token") {
        let mut books = server.books();
        books.refresh.remove(token);
        books.access.remove(token);
        eprintln!("oauth: revoked a token");
    }
    StatusCode::OK.into_response()
}

async fn revoke_all(State(server): State<Arc<Server>>) -> Response {
    let mut books = server.books();
    books.refresh.clear();
    books.access.clear();
    eprintln!("oauth: revoked every token");
    StatusCode::OK.into_response()
}

/// Every access token stops working (refresh tokens stay): a 401 in the middle of a session.
async fn expire_access(State(server): State<Arc<Server>>) -> Response {
    server.books().access.clear();
    eprintln!("oauth: expired every access token");
    StatusCode::OK.into_response()
}

/// The guard in front of `/mcp`.
async fn guard(State(server): State<Arc<Server>>, request: Request, next: Next) -> Response {
    let base = base(request.headers());
    let metadata = format!(
        "{base}/.well-known/oauth-protected-resource{}",
        server.config.path
    );
    let scheme = if server.config.dpop { "DPoP" } else { "Bearer" };
    let presented = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix(scheme)?.strip_prefix(' '))
        .map(str::to_owned);
    let access = presented.as_ref().and_then(|token| {
        let books = server.books();
        books
            .access
            .get(token)
            .filter(|a| a.expires > Instant::now())
            .map(|a| (a.scope.clone(), a.jkt.clone(), a.sub.clone()))
    });
    if let (Some(token), Some((_, bound, _))) = (&presented, &access)
        && server.config.dpop
    {
        let url = format!("{base}{}", request.uri().path());
        let method = request.method().as_str().to_owned();
        let checked = check_proof(
            request.headers(),
            &method,
            &url,
            Some(token),
            &mut server.books(),
        );
        let refusal = match checked {
            Err(why) => Some(("invalid_dpop_proof", why)),
            Ok((jkt, _)) if Some(&jkt) != bound.as_ref() => Some((
                "invalid_dpop_proof",
                "the proof key is not the token's".to_owned(),
            )),
            Ok((_, nonce)) if nonce.as_deref() != Some(DPOP_NONCE) => {
                Some(("use_dpop_nonce", "a nonce is required".to_owned()))
            }
            Ok(_) => None,
        };
        if let Some((error, why)) = refusal {
            if error == "use_dpop_nonce" {
                eprintln!("oauth: use_dpop_nonce at the resource");
            } else {
                eprintln!("oauth: dpop proof refused: {why}");
            }
            return (
                StatusCode::UNAUTHORIZED,
                [
                    (
                        WWW_AUTHENTICATE,
                        format!(r#"DPoP error="{error}", resource_metadata="{metadata}""#),
                    ),
                    (
                        axum::http::HeaderName::from_static("dpop-nonce"),
                        DPOP_NONCE.to_owned(),
                    ),
                ],
                "proof refused\n",
            )
                .into_response();
        }
    }
    let mut request = request;
    // Only the guard names the subject: a client's own header of that name is dropped.
    request.headers_mut().remove(SUBJECT_HEADER);
    if let Some((_, _, sub)) = &access
        && let Ok(value) = axum::http::HeaderValue::from_str(sub)
    {
        request.headers_mut().insert(SUBJECT_HEADER, value);
    }
    let scope = access.map(|(scope, _, _)| scope);
    let Some(scope) = scope else {
        let challenge = if presented.is_some() {
            format!(
                r#"{scheme} error="invalid_token", resource_metadata="{metadata}", scope="mcp""#
            )
        } else {
            format!(r#"{scheme} resource_metadata="{metadata}", scope="mcp""#)
        };
        eprintln!(
            "oauth: 401 ({})",
            if presented.is_some() {
                "bad token"
            } else {
                "no token"
            }
        );
        return (
            StatusCode::UNAUTHORIZED,
            [(WWW_AUTHENTICATE, challenge)],
            "authorization required\n",
        )
            .into_response();
    };
    let Some((tool, needed)) = server.config.tool_scope.clone() else {
        return next.run(request).await;
    };
    let (parts, body) = request.into_parts();
    let Ok(bytes) = to_bytes(body, BODY_LIMIT).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let calls_tool = serde_json::from_slice::<Value>(&bytes).is_ok_and(|v| {
        v.get("method").and_then(Value::as_str) == Some("tools/call")
            && v.pointer("/params/name").and_then(Value::as_str) == Some(tool.as_str())
    });
    if calls_tool && !scope.split_whitespace().any(|s| s == needed) {
        eprintln!("oauth: 403 insufficient_scope for {tool}");
        let challenge = format!(
            r#"Bearer error="insufficient_scope", scope="mcp {needed}", resource_metadata="{metadata}""#
        );
        return (
            StatusCode::FORBIDDEN,
            [(WWW_AUTHENTICATE, challenge)],
            "insufficient scope\n",
        )
            .into_response();
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// Checks the `DPoP` proof of a `method` request to `url` (presenting `token`): its key's
/// thumbprint and the nonce it carries, or why it is refused.
fn check_proof(
    headers: &HeaderMap,
    method: &str,
    url: &str,
    token: Option<&str>,
    books: &mut Books,
) -> Result<(String, Option<String>), String> {
    use jsonwebtoken::{Algorithm, DecodingKey, Validation, jwk::ThumbprintHash};
    let mut proofs = headers.get_all("dpop").iter();
    let (Some(proof), None) = (proofs.next(), proofs.next()) else {
        return Err("not one DPoP header".to_owned());
    };
    let proof = proof.to_str().map_err(|_| "not text".to_owned())?;
    let header = jsonwebtoken::decode_header(proof).map_err(|e| format!("header: {e}"))?;
    if header.typ.as_deref() != Some("dpop+jwt") || header.alg != Algorithm::ES256 {
        return Err("typ or alg".to_owned());
    }
    let jwk = header.jwk.ok_or("no jwk")?;
    let key = DecodingKey::from_jwk(&jwk).map_err(|e| format!("jwk: {e}"))?;
    let mut validation = Validation::new(Algorithm::ES256);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    let claims = jsonwebtoken::decode::<Value>(proof, &key, &validation)
        .map_err(|e| format!("signature: {e}"))?
        .claims;
    let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
    let jti = text("jti").ok_or("no jti")?;
    if !books.jtis.insert(jti) {
        return Err("a replayed jti".to_owned());
    }
    if text("htm").as_deref() != Some(method) {
        return Err(format!("htm is not {method}"));
    }
    if text("htu").as_deref() != Some(url) {
        return Err(format!("htu {:?} is not {url}", text("htu")));
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let iat = claims.get("iat").and_then(Value::as_u64).unwrap_or(0);
    if iat.abs_diff(now) > 300 {
        return Err("iat out of range".to_owned());
    }
    if let Some(token) = token {
        let ath = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha256(token.as_bytes()));
        if text("ath").as_deref() != Some(ath.as_str()) {
            return Err("ath is not the token's hash".to_owned());
        }
    }
    let jkt = jwk
        .thumbprint(ThumbprintHash::SHA256)
        .map_err(|e| format!("thumbprint: {e}"))?;
    Ok((jkt, text("nonce")))
}

fn json_response(status: StatusCode, value: Value) -> Response {
    (
        status,
        [(CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

fn sha256(data: &[u8]) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(data).to_vec()
}

#[cfg(test)]
mod tests {
    #[test]
    fn sha256_of_abc() {
        let digest = super::sha256(b"abc");
        assert_eq!(
            digest[..4],
            [0xba, 0x78, 0x16, 0xbf],
            "the FIPS 180-2 test vector"
        );
    }
}
