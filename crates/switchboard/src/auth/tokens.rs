//! Token endpoint requests with the client's authentication, the refresh under the store
//! lock, the grants without a user — client credentials, and Cross-App Access (`oauth.xaa`:
//! an RFC 8693 token exchange of the user's ID token for an ID-JAG at their identity provider,
//! then the RFC 7523 jwt-bearer grant of it at the server's authorization server, as the
//! Identity Assertion Authorization Grant draft has it; workload identity federation, the
//! jwt-bearer grant of a JWT the workload's platform issued) — and what a token endpoint
//! answers.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use url::Url;

use super::discovery::{Discovery, IssuerCheck, check_safe, origin_of, server_metadata};
use super::dpop::{self, DpopKey};
use super::store::{ClientAuth, ClientIdentity, Record, Tokens, now};

const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
const ID_JAG_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";
const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";

/// The identity provider's answer to the token exchange (its `token_type` is `N_A`).
#[derive(Debug, Deserialize)]
struct ExchangeResponse {
    access_token: String,
    #[serde(default)]
    issued_token_type: Option<String>,
}
use super::{AuthCause, AuthError, Authorizer, Challenge, OAUTH_TIMEOUT, REFRESH_MARGIN};
use crate::net::{cut, http_client};

#[derive(Debug, Deserialize)]
pub(super) struct TokenResponse {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct OAuthErrorBody {
    pub(super) error: String,
    #[serde(default)]
    pub(super) error_description: Option<String>,
}

impl OAuthErrorBody {
    /// `error: error_description` (the description cut to 200 characters).
    pub(super) fn describe(&self) -> String {
        match &self.error_description {
            Some(description) => format!("{}: {}", self.error, cut(description, 200)),
            None => self.error.clone(),
        }
    }
}

/// A token endpoint failure: the OAuth error when the server sent one.
pub(super) enum TokenFailure {
    /// The endpoint refused with an OAuth error: the error, and the answer (origin, status).
    OAuth {
        body: OAuthErrorBody,
        refusal: AuthCause,
    },
    Other(AuthError),
}

impl TokenFailure {
    pub(super) fn into_error(self) -> AuthError {
        match self {
            TokenFailure::OAuth { refusal, .. } => AuthError::Token {
                what: String::new(),
                source: Some(refusal),
            },
            TokenFailure::Other(e) => e,
        }
    }
}

impl Authorizer {
    /// Refreshes under the store lock, in a task of its own: a caller that goes away (a request
    /// cancelled, a shutdown) does not stop it between spending the refresh token and storing
    /// the new one, which would leave a spent refresh token stored.
    pub(super) async fn refresh(self: &Arc<Self>, sent: Option<&str>) -> Result<String, AuthError> {
        let this = self.clone();
        let sent = sent.map(str::to_owned);
        tokio::spawn(async move { this.refresh_locked(sent.as_deref()).await })
            .await
            .unwrap_or_else(|e| {
                Err(AuthError::Store {
                    what: format!("the token refresh failed: {e}"),
                    source: None,
                })
            })
    }

    /// Refreshes under the store lock. When the stored token differs from `sent`, another
    /// task or process already replaced it: that one is used, the refresh token not spent.
    async fn refresh_locked(&self, sent: Option<&str>) -> Result<String, AuthError> {
        let lock = self.options.store.lock(&self.key).await?;
        let mut record = self.options.store.load(&self.key).await?;
        let Some(tokens) = record.tokens.clone() else {
            // Why they were dropped (a refused refresh token), when they were: any process or
            // connection that finds none says the same, not that none was ever stored.
            let why = record.dropped.clone().unwrap_or_else(|| {
                "the server wants authorization (HTTP 401) and no token is stored".to_owned()
            });
            return Err(self.needs_login(&why));
        };
        if sent.is_some_and(|s| s != tokens.access_token) && !tokens.expires_within(REFRESH_MARGIN)
        {
            self.remember(Some(&tokens));
            return Ok(tokens.access_token);
        }
        let (Some(refresh_token), Some(client)) =
            (tokens.refresh_token.clone(), record.client.clone())
        else {
            return Err(self.needs_login("the access token expired and there is no refresh token"));
        };
        let endpoint = Url::parse(&tokens.token_endpoint).map_err(|_| AuthError::Store {
            what: "the stored token endpoint is not a URL".to_owned(),
            source: None,
        })?;
        check_safe(&endpoint, "the token endpoint")?;
        let params = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token.clone()),
            ("resource", tokens.resource.clone()),
        ];
        let key = tokens
            .dpop_key
            .as_deref()
            .map(|stored| self.dpop_key(stored))
            .transpose()?;
        match self
            .token_request(&endpoint, &client, params, key.as_deref())
            .await
        {
            Ok(response) => {
                let mut fresh = self.tokens_from(
                    response,
                    &tokens.token_endpoint,
                    &tokens.resource,
                    tokens.issuer.clone(),
                    tokens.revocation_endpoint.clone(),
                    Some(refresh_token),
                    tokens.scope.clone(),
                );
                fresh.dpop_key = tokens.dpop_key.clone();
                let token = fresh.access_token.clone();
                self.remember(Some(&fresh));
                record.tokens = Some(fresh);
                record.dropped = None;
                self.options.store.save(&self.key, Some(record)).await?;
                drop(lock);
                tracing::debug!(target: "switchboard::auth", server = %self.server, "refreshed the access token");
                Ok(token)
            }
            Err(TokenFailure::OAuth { body, .. })
                if matches!(
                    body.error.as_str(),
                    "invalid_grant" | "invalid_client" | "unauthorized_client"
                ) =>
            {
                // The refresh token is spent or revoked: forget the tokens, keep the client, and
                // say why (stored, so every connection and process that finds none says so).
                let why = format!(
                    "the authorization server refused the refresh token ({})",
                    body.describe()
                );
                record.tokens = None;
                record.dropped = Some(why.clone());
                self.options.store.save(&self.key, Some(record)).await?;
                drop(lock);
                self.remember(None);
                Err(self.needs_login(&why))
            }
            Err(failure) => Err(failure.into_error()),
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn tokens_from(
        &self,
        response: TokenResponse,
        token_endpoint: &str,
        resource: &str,
        issuer: Option<String>,
        revocation_endpoint: Option<String>,
        old_refresh: Option<String>,
        requested_scope: Option<String>,
    ) -> Tokens {
        Tokens {
            access_token: response.access_token,
            refresh_token: response.refresh_token.or(old_refresh),
            expires_at: response.expires_in.map(|s| now().saturating_add(s)),
            scope: response.scope.or(requested_scope),
            token_endpoint: token_endpoint.to_owned(),
            resource: resource.to_owned(),
            issuer,
            revocation_endpoint,
            token_type: response.token_type,
            dpop_key: None,
        }
    }

    /// A grant without a user's browser: this server's configuration asks for one.
    pub(super) fn without_browser(&self) -> bool {
        self.config.client_credentials
            || self.config.xaa
            || self.config.assertion_env.is_some()
            || self.config.token_exchange
    }

    /// The grant [`without_browser`](Self::without_browser) names: Cross-App Access or client
    /// credentials.
    pub(super) async fn grant_without_browser(
        &self,
        challenge: Option<&Challenge>,
    ) -> Result<String, AuthError> {
        if self.config.token_exchange {
            self.token_exchange(challenge).await
        } else if self.config.xaa {
            self.cross_app_access(challenge).await
        } else if let Some(var) = &self.config.assertion_env {
            self.workload_assertion(var, challenge).await
        } else {
            self.client_credentials(challenge).await
        }
    }

    /// Cross-App Access: the user's ID token (from `oauth.idTokenEnv`) exchanged at the
    /// identity provider for an ID-JAG whose audience is the authorization server and whose
    /// resource is this server, then the ID-JAG given to the authorization server (jwt-bearer
    /// grant, the pre-registered client authenticating) for the access token.
    pub(super) async fn cross_app_access(
        &self,
        challenge: Option<&Challenge>,
    ) -> Result<String, AuthError> {
        let config_error = |what: &str| {
            AuthError::Config(format!(
                "server `{}`: Cross-App Access (`oauth.xaa`) {what}",
                self.server
            ))
        };
        let (discovery, client) = self
            .discover_preregistered(challenge, || {
                config_error("needs `oauth.clientId` and a secret (`oauth.clientSecretEnv` or `oauth.clientSecretKeychain`) registered at the server's authorization server")
            })
            .await?;
        let audience = discovery
            .issuer
            .clone()
            .ok_or_else(|| config_error("needs the authorization server's metadata (its issuer is the assertion's audience)"))?;
        let var = self
            .config
            .id_token_env
            .as_deref()
            .ok_or_else(|| config_error("needs `oauth.idTokenEnv`, the variable holding your ID token from the identity provider"))?;
        let id_token = self
            .env
            .get(var)
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                config_error(&format!(
                    "needs your ID token from the identity provider: the environment variable `{var}` (`oauth.idTokenEnv`) is not set"
                ))
            })?
            .to_owned();
        let client_http = http_client().map_err(|e| AuthError::Discovery {
            what: e.to_string(),
            source: None,
        })?;
        let idp_endpoint = self.idp_token_endpoint(&client_http).await?;
        let scopes = self.scopes(challenge, &discovery, &[]);

        // RFC 8693 at the identity provider: ID token in, ID-JAG out.
        let idp_client = ClientIdentity {
            issuer: self.config.idp_issuer.clone(),
            client_id: self
                .config
                .idp_client_id
                .clone()
                .unwrap_or_else(|| client.client_id.clone()),
            client_secret: None,
            auth: ClientAuth::None,
            redirect_uri: None,
        };
        let mut params = vec![
            ("grant_type", TOKEN_EXCHANGE.to_owned()),
            ("requested_token_type", ID_JAG_TYPE.to_owned()),
            ("audience", audience),
            ("resource", discovery.resource.clone()),
            ("subject_token", id_token),
            ("subject_token_type", ID_TOKEN_TYPE.to_owned()),
        ];
        if !scopes.is_empty() {
            params.push(("scope", scopes.join(" ")));
        }
        let (status, bytes) = self.post_form(&idp_endpoint, &idp_client, params).await?;
        if !status.is_success() {
            return Err(AuthError::Token {
                what: "the identity provider refused the token exchange".to_owned(),
                source: Some(AuthCause::status(&idp_endpoint, status, &bytes)),
            });
        }
        let exchanged: ExchangeResponse =
            serde_json::from_slice(&bytes).map_err(|e| AuthError::Token {
                what: format!(
                    "the answer from the identity provider at {} is not a token exchange response",
                    origin_of(&idp_endpoint)
                ),
                source: Some(AuthCause::Json(e)),
            })?;
        if exchanged
            .issued_token_type
            .as_deref()
            .is_some_and(|t| t != ID_JAG_TYPE)
        {
            return Err(AuthError::Token {
                what: format!(
                    "the identity provider at {} issued another kind of token than an ID-JAG",
                    origin_of(&idp_endpoint)
                ),
                source: None,
            });
        }

        // RFC 7523 at the authorization server: the ID-JAG for an access token.
        self.jwt_bearer_grant(exchanged.access_token, &discovery, client, scopes)
            .await
    }

    /// Workload identity federation: the JWT in `var` (issued by the workload's platform for
    /// the authorization server) given to the authorization server in a jwt-bearer grant. A
    /// refusal is final: no retry, no other grant.
    async fn workload_assertion(
        &self,
        var: &str,
        challenge: Option<&Challenge>,
    ) -> Result<String, AuthError> {
        let (discovery, client) = self
            .discover_preregistered(challenge, || {
                AuthError::Config(format!(
                    "server `{}`: the workload's assertion (`oauth.assertionEnv`) needs `oauth.clientId`",
                    self.server
                ))
            })
            .await?;
        let assertion = self
            .env
            .get(var)
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                AuthError::Config(format!(
                    "server `{}`, field `oauth.assertionEnv`: the environment variable `{var}` is not set",
                    self.server
                ))
            })?
            .to_owned();
        let scopes = self.scopes(challenge, &discovery, &[]);
        self.jwt_bearer_grant(assertion, &discovery, client, scopes)
            .await
    }

    /// RFC 7523 at the authorization server: `assertion` (an ID-JAG, or a workload's JWT) for
    /// an access token, which is kept.
    async fn jwt_bearer_grant(
        &self,
        assertion: String,
        discovery: &Discovery,
        client: ClientIdentity,
        scopes: Vec<String>,
    ) -> Result<String, AuthError> {
        let grant = vec![
            ("grant_type", JWT_BEARER.to_owned()),
            ("assertion", assertion),
        ];
        self.grant_without_user(grant, discovery, client, scopes, TokenFailure::into_error)
            .await
    }

    /// A grant without a user (jwt-bearer, client credentials, token exchange) at the
    /// authorization server's token endpoint: the grant's own parameters, then this server as
    /// the `resource` and the scopes; the pre-registered client authenticates. What it answers
    /// is kept; a refusal becomes the error `refused` makes of it.
    async fn grant_without_user(
        &self,
        mut params: Vec<(&'static str, String)>,
        discovery: &Discovery,
        client: ClientIdentity,
        scopes: Vec<String>,
        refused: impl FnOnce(TokenFailure) -> AuthError,
    ) -> Result<String, AuthError> {
        let endpoint = discovery.token_endpoint()?;
        params.push(("resource", discovery.resource.clone()));
        if !scopes.is_empty() {
            params.push(("scope", scopes.join(" ")));
        }
        let response = self
            .token_request(&endpoint, &client, params, None)
            .await
            .map_err(refused)?;
        self.keep_grant(response, &endpoint, discovery, client, scopes)
            .await
    }

    /// The identity provider's token endpoint: configured, or from its issuer's metadata.
    async fn idp_token_endpoint(&self, http: &reqwest::Client) -> Result<Url, AuthError> {
        let text = match (&self.config.idp_token_endpoint, &self.config.idp_issuer) {
            (Some(endpoint), _) => endpoint.clone(),
            (None, Some(issuer)) => server_metadata(http, issuer, IssuerCheck::Exact)
                .await?
                .and_then(|m| m.token_endpoint)
                .ok_or_else(|| {
                    AuthError::Discovery { what: format!(
                        "the identity provider's metadata names no token endpoint (server `{}`, `oauth.idpIssuer`)",
                        self.server
                    ), source: None }
                })?,
            (None, None) => {
                return Err(AuthError::Config(format!(
                    "server `{}`: Cross-App Access (`oauth.xaa`) needs `oauth.idpIssuer` or `oauth.idpTokenEndpoint`",
                    self.server
                )));
            }
        };
        let url = Url::parse(&text).map_err(|_| {
            AuthError::Config(format!(
                "server `{}`: the identity provider's token endpoint is not a URL",
                self.server
            ))
        })?;
        check_safe(&url, "the identity provider's token endpoint")?;
        Ok(url)
    }

    /// Stores what a grant without a user answered and returns its access token.
    async fn keep_grant(
        &self,
        response: TokenResponse,
        endpoint: &Url,
        discovery: &Discovery,
        client: ClientIdentity,
        scopes: Vec<String>,
    ) -> Result<String, AuthError> {
        let tokens = self.tokens_from(
            response,
            endpoint.as_str(),
            &discovery.resource,
            discovery.issuer.clone(),
            discovery.metadata.revocation_endpoint.clone(),
            None,
            Some(scopes.join(" ")).filter(|s| !s.is_empty()),
        );
        let token = tokens.access_token.clone();
        self.remember(Some(&tokens));
        let lock = self.options.store.lock(&self.key).await?;
        self.options
            .store
            .save(
                &self.key,
                Some(Record {
                    client: Some(client),
                    tokens: Some(tokens),
                    dropped: None,
                }),
            )
            .await?;
        drop(lock);
        Ok(token)
    }

    /// Discovery for a grant without a user (client credentials, a workload's or Cross-App
    /// Access's assertion), and the pre-registered client it needs; `missing` is the error
    /// when none is configured.
    pub(super) async fn discover_preregistered(
        &self,
        challenge: Option<&Challenge>,
        missing: impl FnOnce() -> AuthError,
    ) -> Result<(Discovery, ClientIdentity), AuthError> {
        let client_http = http_client().map_err(|e| AuthError::Discovery {
            what: e.to_string(),
            source: None,
        })?;
        let discovery = self
            .discover(
                &client_http,
                challenge.and_then(Challenge::resource_metadata),
            )
            .await?;
        let client = self.preregistered(&discovery).await?.ok_or_else(missing)?;
        Ok((discovery, client))
    }

    /// RFC 8693 token exchange (`oauth.tokenExchange`, per-user credentials): the caller's own
    /// access token at the gateway — the subject token, the latest the gateway was given for
    /// this caller — exchanged at the server's authorization server (which trusts the
    /// gateway's identity provider) for the caller's access token there, which is kept as
    /// theirs. No browser; no refresh token (an expired one is exchanged again).
    pub(super) async fn token_exchange(
        &self,
        challenge: Option<&Challenge>,
    ) -> Result<String, AuthError> {
        let subject_token = self
            .subject_token()
            .ok_or_else(|| self.needs_login("no access token of the caller to exchange"))?;
        let (discovery, client) = self
            .discover_preregistered(challenge, || {
                AuthError::Config(format!(
                    "server `{}`: token exchange (`oauth.tokenExchange`) needs `oauth.clientId`",
                    self.server
                ))
            })
            .await?;
        let scopes = self.scopes(challenge, &discovery, &[]);
        let grant = vec![
            ("grant_type", TOKEN_EXCHANGE.to_owned()),
            ("subject_token", subject_token),
            ("subject_token_type", ACCESS_TOKEN_TYPE.to_owned()),
            ("requested_token_type", ACCESS_TOKEN_TYPE.to_owned()),
        ];
        let token = self
            .grant_without_user(grant, &discovery, client, scopes, |failure| match failure {
                // The subject token refused (expired, not trusted): the caller's, to renew.
                TokenFailure::OAuth { body, .. } if body.error == "invalid_grant" => self
                    .needs_login(&format!(
                        "the authorization server refused to exchange the caller's token ({})",
                        body.describe()
                    )),
                other => other.into_error(),
            })
            .await?;
        tracing::debug!(target: "switchboard::auth", server = %self.server, "exchanged a caller's token");
        Ok(token)
    }

    /// The client-credentials grant (machine to machine): a pre-registered client id and
    /// secret, no user.
    pub(super) async fn client_credentials(
        &self,
        challenge: Option<&Challenge>,
    ) -> Result<String, AuthError> {
        let (discovery, client) = self
            .discover_preregistered(challenge, || {
                AuthError::Config(format!(
                    "server `{}`: the client-credentials grant needs `oauth.clientId` and a secret (`oauth.clientSecretEnv` or `oauth.clientSecretKeychain`)",
                    self.server
                ))
            })
            .await?;
        let scopes = self.scopes(challenge, &discovery, &[]);
        let grant = vec![("grant_type", "client_credentials".to_owned())];
        self.grant_without_user(grant, &discovery, client, scopes, TokenFailure::into_error)
            .await
    }

    /// A token endpoint request with the client's authentication, bounded by [`OAUTH_TIMEOUT`].
    /// A token request; with `dpop`, carrying a proof (RFC 9449 §5), sent once more with the
    /// authorization server's nonce when it answers `use_dpop_nonce` (§8).
    pub(super) async fn token_request(
        &self,
        endpoint: &Url,
        client: &ClientIdentity,
        params: Vec<(&'static str, String)>,
        dpop: Option<&DpopKey>,
    ) -> Result<TokenResponse, TokenFailure> {
        let mut nonce_retried = false;
        let (status, bytes) = loop {
            let proof = match dpop {
                Some(key) => {
                    let nonce = self.as_nonce.lock().clone();
                    Some(
                        key.proof("POST", endpoint, None, nonce.as_deref())
                            .map_err(TokenFailure::Other)?,
                    )
                }
                None => None,
            };
            let (status, nonce, bytes) = self
                .post_form_with(endpoint, client, params.clone(), proof)
                .await
                .map_err(TokenFailure::Other)?;
            let wants_nonce = status == reqwest::StatusCode::BAD_REQUEST
                && serde_json::from_slice::<OAuthErrorBody>(&bytes)
                    .is_ok_and(|b| b.error == dpop::USE_DPOP_NONCE);
            match nonce {
                Some(nonce) if dpop.is_some() && wants_nonce && !nonce_retried => {
                    nonce_retried = true;
                    *self.as_nonce.lock() = Some(nonce);
                }
                _ => break (status, bytes),
            }
        };
        if !status.is_success() {
            let refusal = AuthCause::status(endpoint, status, &bytes);
            return Err(match serde_json::from_slice::<OAuthErrorBody>(&bytes) {
                Ok(body) => TokenFailure::OAuth { body, refusal },
                Err(_) => TokenFailure::Other(AuthError::Token {
                    what: String::new(),
                    source: Some(refusal),
                }),
            });
        }
        let response: TokenResponse = serde_json::from_slice(&bytes).map_err(|e| {
            TokenFailure::Other(AuthError::Token {
                what: format!(
                    "the answer from {} is not a token response",
                    origin_of(endpoint)
                ),
                source: Some(AuthCause::Json(e)),
            })
        })?;
        let token_type = response.token_type.as_deref().unwrap_or("bearer");
        let dpop_bound = token_type.eq_ignore_ascii_case("dpop");
        let usable = token_type.eq_ignore_ascii_case("bearer") || dpop_bound && dpop.is_some();
        if !usable {
            return Err(TokenFailure::Other(AuthError::Token {
                what: format!(
                    "the token is a `{}` token, not a bearer token{}",
                    cut(token_type, 40),
                    if dpop_bound {
                        " (DPoP-bound, yet no proof was sent)"
                    } else {
                        ""
                    }
                ),
                source: None,
            }));
        }
        Ok(response)
    }

    pub(super) async fn post_form(
        &self,
        endpoint: &Url,
        client: &ClientIdentity,
        params: Vec<(&'static str, String)>,
    ) -> Result<(reqwest::StatusCode, Vec<u8>), AuthError> {
        let (status, _, bytes) = self.post_form_with(endpoint, client, params, None).await?;
        Ok((status, bytes))
    }

    /// A form POST to a token endpoint with the client's authentication (and a DPoP `proof`):
    /// the status, the `DPoP-Nonce` the server sent, and the body.
    async fn post_form_with(
        &self,
        endpoint: &Url,
        client: &ClientIdentity,
        mut params: Vec<(&'static str, String)>,
        proof: Option<String>,
    ) -> Result<(reqwest::StatusCode, Option<String>, Vec<u8>), AuthError> {
        check_safe(endpoint, "the token endpoint")?;
        // An empty `resource` is none at all (`oauth.resource: false`).
        params.retain(|(key, value)| *key != "resource" || !value.is_empty());
        let http = http_client().map_err(|e| AuthError::Token {
            what: e.to_string(),
            source: None,
        })?;
        let mut request = http
            .post(endpoint.clone())
            .header(reqwest::header::ACCEPT, "application/json");
        if let Some(proof) = proof {
            request = request.header(dpop::DPOP, proof);
        }
        match (client.auth, &client.client_secret) {
            (ClientAuth::ClientSecretBasic, Some(secret)) => {
                let pair = format!("{}:{}", form_encode(&client.client_id), form_encode(secret));
                let mut value = reqwest::header::HeaderValue::from_str(&format!(
                    "Basic {}",
                    STANDARD.encode(pair)
                ))
                .map_err(|_| {
                    AuthError::Config("the client id cannot be sent in a header".to_owned())
                })?;
                value.set_sensitive(true);
                request = request.header(reqwest::header::AUTHORIZATION, value);
            }
            (ClientAuth::ClientSecretPost, Some(secret)) => {
                params.push(("client_id", client.client_id.clone()));
                params.push(("client_secret", secret.clone()));
            }
            (ClientAuth::PrivateKeyJwt, _) => {
                let assertion = self.client_assertion(client, endpoint)?;
                params.push(("client_id", client.client_id.clone()));
                params.push((
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_owned(),
                ));
                params.push(("client_assertion", assertion));
            }
            _ => params.push(("client_id", client.client_id.clone())),
        }
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(params.iter().map(|(k, v)| (*k, v.as_str())))
            .finish();
        let response = request
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(body)
            .timeout(OAUTH_TIMEOUT)
            .send()
            .await
            .map_err(|e| AuthError::Token {
                what: String::new(),
                source: Some(AuthCause::http(endpoint, e)),
            })?;
        let status = response.status();
        if status.is_redirection() {
            return Err(AuthError::Refused(format!(
                "the token endpoint at {} redirected",
                origin_of(endpoint)
            )));
        }
        let nonce = response
            .headers()
            .get(dpop::DPOP_NONCE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let bytes = response.bytes().await.map_err(|e| AuthError::Token {
            what: String::new(),
            source: Some(AuthCause::http(endpoint, e)),
        })?;
        Ok((status, nonce, bytes.to_vec()))
    }
}

/// `application/x-www-form-urlencoded` of one value (RFC 6749 §2.3.1 for Basic credentials).
fn form_encode(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials_are_form_encoded() {
        assert_eq!(form_encode("a b:c"), "a+b%3Ac");
    }
}
