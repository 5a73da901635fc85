//! One server's authorization: tokens before requests, refresh, the authorization code flow,
//! step-up, client credentials, logout.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde::Deserialize;
use sha2::Digest;
use url::Url;

use super::callback::Callback;
use super::discovery::{Discovery, check_safe, discover, origin_of};
use super::store::{ClientAuth, ClientIdentity, Record, Tokens, now};
use super::{
    AuthError, AuthOptions, Challenge, MAX_STEP_UPS, OAUTH_TIMEOUT, REFRESH_MARGIN, login_hint,
};
use crate::config::{Environment, OAuthConfig};
use crate::transport::remote::{cut, describe, http_client};

/// What the token store says about a server, for listings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthStatus {
    /// No tokens stored.
    None,
    /// Tokens stored; `expires_at` in seconds since the epoch.
    LoggedIn {
        expires_at: Option<u64>,
        refreshable: bool,
        scope: Option<String>,
    },
}

/// One server's authorization state and flows. Shared by the server's transports.
pub struct Authorizer {
    server: String,
    url: Url,
    key: String,
    config: OAuthConfig,
    env: Environment,
    options: AuthOptions,
    /// The tokens as last read or written (`None`: not read yet), so a request does not read
    /// the store file; a 401 re-reads it under the lock.
    cached: Mutex<Option<Option<Tokens>>>,
    step_ups: AtomicU32,
    /// Why this process last dropped the stored tokens (a refused refresh token): a request
    /// that raced the refusal says the same, not that no token was ever stored.
    dropped: Mutex<Option<String>>,
    /// Serialises refreshes and flows within this process (the store lock does it across).
    busy: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer")
            .field("server", &self.server)
            .field("url", &origin_of(&self.url))
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Deserialize)]
struct TokenResponse {
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
struct OAuthErrorBody {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

/// A token endpoint failure: the OAuth error code when the server sent one.
enum TokenFailure {
    OAuth(String, Option<String>),
    Other(AuthError),
}

impl TokenFailure {
    fn into_error(self) -> AuthError {
        match self {
            TokenFailure::OAuth(code, Some(description)) => {
                AuthError::Token(format!("{code}: {}", cut(&description, 200)))
            }
            TokenFailure::OAuth(code, None) => AuthError::Token(code),
            TokenFailure::Other(e) => e,
        }
    }
}

impl Authorizer {
    pub fn new(
        server: &str,
        url: &Url,
        config: OAuthConfig,
        env: Environment,
        options: AuthOptions,
    ) -> Authorizer {
        let mut key_url = url.clone();
        key_url.set_fragment(None);
        Authorizer {
            server: server.to_owned(),
            url: url.clone(),
            key: format!("{server} {key_url}"),
            config,
            env,
            options,
            cached: Mutex::new(None),
            step_ups: AtomicU32::new(0),
            dropped: Mutex::new(None),
            busy: tokio::sync::Mutex::new(()),
        }
    }

    pub fn server(&self) -> &str {
        &self.server
    }

    fn needs_login(&self, why: &str) -> AuthError {
        AuthError::NeedsLogin(format!("{why}; {}", login_hint(&self.server)))
    }

    fn remember(&self, tokens: Option<&Tokens>) {
        if let Ok(mut cached) = self.cached.lock() {
            *cached = Some(tokens.cloned());
        }
        if tokens.is_some()
            && let Ok(mut dropped) = self.dropped.lock()
        {
            *dropped = None;
        }
    }

    /// What is stored for this server.
    pub async fn status(&self) -> Result<AuthStatus, AuthError> {
        let record = self.options.store.load(&self.key).await?;
        Ok(match record.tokens {
            Some(t) => AuthStatus::LoggedIn {
                expires_at: t.expires_at,
                refreshable: t.refresh_token.is_some(),
                scope: t.scope,
            },
            None => AuthStatus::None,
        })
    }

    /// The token to send: the stored one, refreshed first when it is about to expire; for a
    /// client-credentials server a new one when none is stored. `None`: send no token.
    pub async fn access_token(self: &Arc<Self>) -> Result<Option<String>, AuthError> {
        let cached = self.cached.lock().ok().and_then(|c| c.clone());
        let tokens = match cached {
            Some(tokens) => tokens,
            None => {
                let tokens = self.options.store.load(&self.key).await?.tokens;
                self.remember(tokens.as_ref());
                tokens
            }
        };
        match tokens {
            Some(tokens) if !tokens.expires_within(REFRESH_MARGIN) => Ok(Some(tokens.access_token)),
            Some(tokens) if tokens.refresh_token.is_some() => {
                match self.refresh(Some(&tokens.access_token)).await {
                    Ok(token) => Ok(Some(token)),
                    // Refused: log in again (inline when interactive: the 401 starts it).
                    Err(AuthError::NeedsLogin(_)) if self.options.interactive => Ok(None),
                    Err(e @ AuthError::NeedsLogin(_)) => Err(e),
                    // The server could not be asked; the token is still valid for a moment:
                    // use it, a 401 will say when it is not.
                    Err(_) if !tokens.expires_within(std::time::Duration::ZERO) => {
                        Ok(Some(tokens.access_token))
                    }
                    Err(e) => Err(e),
                }
            }
            _ if self.config.client_credentials => self.client_credentials(None).await.map(Some),
            Some(tokens) => Ok(Some(tokens.access_token)),
            None => Ok(None),
        }
    }

    /// After a 401 for `sent`: a token another task or process stored meanwhile, a refreshed
    /// one, new client credentials, the whole flow (when interactive) — or `NeedsLogin`.
    pub async fn unauthorized(
        self: &Arc<Self>,
        www_authenticate: Option<&str>,
        sent: Option<&str>,
    ) -> Result<String, AuthError> {
        let challenge = Challenge::parse(www_authenticate.unwrap_or(""));
        let _busy = self.busy.lock().await;
        match self.refresh(sent).await {
            Ok(token) => return Ok(token),
            Err(AuthError::NeedsLogin(message)) => {
                if self.config.client_credentials {
                    return self.client_credentials(Some(&challenge)).await;
                }
                if !self.options.interactive {
                    return Err(AuthError::NeedsLogin(message));
                }
            }
            Err(e) => return Err(e),
        }
        let tokens = self.authorize(&challenge, &[]).await?;
        Ok(tokens.access_token)
    }

    /// After a 403 with `insufficient_scope`: authorize again with the union of the scopes
    /// held and those asked for, at most [`MAX_STEP_UPS`] times per connection.
    pub async fn insufficient_scope(&self, www_authenticate: &str) -> Result<String, AuthError> {
        let challenge = Challenge::parse(www_authenticate);
        let _busy = self.busy.lock().await;
        if !challenge.is_insufficient_scope() {
            return Err(AuthError::Denied(
                "the server refused access (HTTP 403)".to_owned(),
            ));
        }
        if self.step_ups.fetch_add(1, Ordering::SeqCst) >= MAX_STEP_UPS {
            return Err(AuthError::Denied(format!(
                "the server still wants more scope after {MAX_STEP_UPS} re-authorizations (insufficient_scope)"
            )));
        }
        let held = self
            .options
            .store
            .load(&self.key)
            .await?
            .tokens
            .map(|t| t.scopes())
            .unwrap_or_default();
        if self.config.client_credentials {
            return self.client_credentials(Some(&challenge)).await;
        }
        if !self.options.interactive {
            return Err(self.needs_login("the server wants more scope (insufficient_scope)"));
        }
        let tokens = self.authorize(&challenge, &held).await?;
        Ok(tokens.access_token)
    }

    /// `switchboard mcp login`: the whole flow now, whatever is stored.
    pub async fn login(&self) -> Result<(), AuthError> {
        let _busy = self.busy.lock().await;
        let www = self.probe_challenge().await;
        let challenge = Challenge::parse(www.as_deref().unwrap_or(""));
        if self.config.client_credentials {
            self.client_credentials(Some(&challenge)).await?;
        } else {
            self.authorize(&challenge, &[]).await?;
        }
        Ok(())
    }

    /// `switchboard mcp logout`: revokes the tokens where the server offers revocation (best
    /// effort) and forgets them. Returns whether anything was stored.
    pub async fn logout(&self) -> Result<bool, AuthError> {
        let _busy = self.busy.lock().await;
        let lock = self.options.store.lock().await?;
        let record = self.options.store.load(&self.key).await?;
        let had = record.tokens.is_some();
        if let (Some(tokens), Some(client)) = (&record.tokens, &record.client)
            && let Some(endpoint) = tokens
                .revocation_endpoint
                .as_deref()
                .and_then(|e| Url::parse(e).ok())
        {
            for (token, hint) in [
                (tokens.refresh_token.as_deref(), "refresh_token"),
                (Some(tokens.access_token.as_str()), "access_token"),
            ] {
                if let Some(token) = token {
                    let params = vec![
                        ("token", token.to_owned()),
                        ("token_type_hint", hint.to_owned()),
                    ];
                    let _ = self.post_form(&endpoint, client, params).await;
                }
            }
        }
        self.options.store.save(&self.key, None).await?;
        drop(lock);
        self.remember(None);
        Ok(had)
    }

    /// An unauthenticated request to the server, for the challenge's scope and metadata URL.
    async fn probe_challenge(&self) -> Option<String> {
        let client = http_client().ok()?;
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "switchboard", "version": env!("CARGO_PKG_VERSION")}}
        });
        let response = client
            .post(self.url.clone())
            .header(
                reqwest::header::ACCEPT,
                "application/json, text/event-stream",
            )
            .json(&body)
            .timeout(OAUTH_TIMEOUT)
            .send()
            .await
            .ok()?;
        if response.status() == reqwest::StatusCode::UNAUTHORIZED {
            crate::transport::remote::www_authenticate(response.headers())
        } else {
            None
        }
    }

    /// Refreshes under the store lock, in a task of its own: a caller that goes away (a request
    /// cancelled, a shutdown) does not stop it between spending the refresh token and storing
    /// the new one, which would leave a spent refresh token stored.
    async fn refresh(self: &Arc<Self>, sent: Option<&str>) -> Result<String, AuthError> {
        let this = self.clone();
        let sent = sent.map(str::to_owned);
        tokio::spawn(async move { this.refresh_locked(sent.as_deref()).await })
            .await
            .unwrap_or_else(|e| Err(AuthError::Store(format!("the token refresh failed: {e}"))))
    }

    /// Refreshes under the store lock. When the stored token differs from `sent`, another
    /// task or process already replaced it: that one is used, the refresh token not spent.
    async fn refresh_locked(&self, sent: Option<&str>) -> Result<String, AuthError> {
        let lock = self.options.store.lock().await?;
        let mut record = self.options.store.load(&self.key).await?;
        let Some(tokens) = record.tokens.clone() else {
            // When this process dropped them (a refused refresh token), that is why there are
            // none, also for a request that raced the refusal and went out with no token.
            let why = self.dropped.lock().ok().and_then(|d| d.clone()).unwrap_or_else(|| {
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
        let endpoint = Url::parse(&tokens.token_endpoint)
            .map_err(|_| AuthError::Store("the stored token endpoint is not a URL".to_owned()))?;
        check_safe(&endpoint, "the token endpoint")?;
        let params = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token.clone()),
            ("resource", tokens.resource.clone()),
        ];
        match self.token_request(&endpoint, &client, params).await {
            Ok(response) => {
                let fresh = self.tokens_from(
                    response,
                    &tokens.token_endpoint,
                    &tokens.resource,
                    tokens.issuer.clone(),
                    tokens.revocation_endpoint.clone(),
                    Some(refresh_token),
                    tokens.scope.clone(),
                );
                let token = fresh.access_token.clone();
                self.remember(Some(&fresh));
                record.tokens = Some(fresh);
                self.options.store.save(&self.key, Some(record)).await?;
                drop(lock);
                tracing::debug!(target: "switchboard::auth", server = %self.server, "refreshed the access token");
                Ok(token)
            }
            Err(TokenFailure::OAuth(code, description))
                if matches!(
                    code.as_str(),
                    "invalid_grant" | "invalid_client" | "unauthorized_client"
                ) =>
            {
                // The refresh token is spent or revoked: forget the tokens, keep the client.
                record.tokens = None;
                self.options.store.save(&self.key, Some(record)).await?;
                drop(lock);
                self.remember(None);
                let why = match description {
                    Some(d) => format!(
                        "the authorization server refused the refresh token ({code}: {})",
                        cut(&d, 200)
                    ),
                    None => format!("the authorization server refused the refresh token ({code})"),
                };
                if let Ok(mut dropped) = self.dropped.lock() {
                    *dropped = Some(why.clone());
                }
                Err(self.needs_login(&why))
            }
            Err(failure) => Err(failure.into_error()),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn tokens_from(
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
        }
    }

    /// The client-credentials grant (machine to machine): a pre-registered client id and
    /// secret, no user.
    async fn client_credentials(&self, challenge: Option<&Challenge>) -> Result<String, AuthError> {
        let client_http = http_client().map_err(|e| AuthError::Discovery(e.to_string()))?;
        let discovery = discover(
            &client_http,
            &self.url,
            challenge.and_then(Challenge::resource_metadata),
        )
        .await?;
        let client = self.preregistered(&discovery).await?.ok_or_else(|| {
            AuthError::Config(format!(
                "server `{}`: the client-credentials grant needs `oauth.clientId` and a secret (`oauth.clientSecretEnv` or `oauth.clientSecretKeychain`)",
                self.server
            ))
        })?;
        let scopes = self.scopes(challenge, &discovery, &[]);
        let endpoint = discovery.token_endpoint()?;
        let mut params = vec![
            ("grant_type", "client_credentials".to_owned()),
            ("resource", discovery.resource.clone()),
        ];
        if !scopes.is_empty() {
            params.push(("scope", scopes.join(" ")));
        }
        let response = self
            .token_request(&endpoint, &client, params)
            .await
            .map_err(TokenFailure::into_error)?;
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
        let lock = self.options.store.lock().await?;
        self.options
            .store
            .save(
                &self.key,
                Some(Record {
                    client: Some(client),
                    tokens: Some(tokens),
                }),
            )
            .await?;
        drop(lock);
        Ok(token)
    }

    /// The scopes to ask for: configured ones, else the challenge's, else the resource's
    /// `scopes_supported`; plus `extra` (step-up); plus `offline_access` where the
    /// authorization server offers it (for a refresh token).
    fn scopes(
        &self,
        challenge: Option<&Challenge>,
        discovery: &Discovery,
        extra: &[String],
    ) -> Vec<String> {
        let mut scopes: Vec<String> = if !self.config.scopes.is_empty() {
            self.config.scopes.clone()
        } else if let Some(s) = challenge.and_then(Challenge::scopes) {
            s
        } else {
            discovery
                .resource_metadata
                .as_ref()
                .and_then(|p| p.scopes_supported.clone())
                .unwrap_or_default()
        };
        for s in extra {
            if !scopes.contains(s) {
                scopes.push(s.clone());
            }
        }
        let offers_offline = discovery
            .metadata
            .scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|s| s == "offline_access"));
        if offers_offline
            && !self.config.client_credentials
            && !scopes.iter().any(|s| s == "offline_access")
        {
            scopes.push("offline_access".to_owned());
        }
        scopes
    }

    /// A pre-registered client (`oauth.clientId`, the secret from `oauth.clientSecretEnv` or
    /// the keychain entry `oauth.clientSecretKeychain`).
    async fn preregistered(
        &self,
        discovery: &Discovery,
    ) -> Result<Option<ClientIdentity>, AuthError> {
        let Some(client_id) = self.config.client_id.clone() else {
            return Ok(None);
        };
        let from_keychain = match &self.config.client_secret_keychain {
            Some(account) => Some(
                self.options
                    .store
                    .client_secret(&self.server, account)
                    .await?,
            ),
            None => None,
        };
        let secret = match &self.config.client_secret_env {
            _ if from_keychain.is_some() => from_keychain,
            Some(var) => Some(
                self.env
                    .get(var)
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .ok_or_else(|| {
                        AuthError::Config(format!(
                            "server `{}`, field `oauth.clientSecretEnv`: the environment variable `{var}` is not set",
                            self.server
                        ))
                    })?
                    .to_owned(),
            ),
            None => None,
        };
        if let Some(var) = &self.config.private_key_env {
            if self.env.get(var).is_none_or(|k| k.trim().is_empty()) {
                return Err(AuthError::Config(format!(
                    "server `{}`, field `oauth.privateKeyEnv`: the environment variable `{var}` is not set",
                    self.server
                )));
            }
            return Ok(Some(ClientIdentity {
                issuer: discovery.issuer.clone(),
                client_id,
                client_secret: None,
                auth: ClientAuth::PrivateKeyJwt,
                redirect_uri: None,
            }));
        }
        let auth = choose_auth(
            secret.is_some(),
            &discovery.metadata.token_endpoint_auth_methods_supported,
        );
        Ok(Some(ClientIdentity {
            issuer: discovery.issuer.clone(),
            client_id,
            client_secret: secret,
            auth,
            redirect_uri: None,
        }))
    }

    /// The client identity at this authorization server: stored (same issuer and redirect),
    /// pre-registered, a Client ID Metadata Document, or dynamic registration.
    async fn identity(
        &self,
        discovery: &Discovery,
        redirect_uri: &str,
        stored: Option<ClientIdentity>,
    ) -> Result<ClientIdentity, AuthError> {
        if let Some(client) = self.preregistered(discovery).await? {
            return Ok(client);
        }
        if let Some(client) = stored
            && client.issuer == discovery.issuer
            && client
                .redirect_uri
                .as_deref()
                .is_none_or(|r| r == redirect_uri)
        {
            return Ok(client);
        }
        if discovery.metadata.client_id_metadata_document_supported == Some(true)
            && let Some(url) = &self.options.client_metadata_url
        {
            return Ok(ClientIdentity {
                issuer: discovery.issuer.clone(),
                client_id: url.clone(),
                client_secret: None,
                auth: ClientAuth::None,
                redirect_uri: None,
            });
        }
        let Some(endpoint) = discovery.metadata.registration_endpoint.as_deref() else {
            return Err(AuthError::Config(format!(
                "server `{}`: the authorization server offers no dynamic registration; set `oauth.clientId` to a client registered there",
                self.server
            )));
        };
        self.register(discovery, endpoint, redirect_uri).await
    }

    /// Dynamic client registration (RFC 7591).
    async fn register(
        &self,
        discovery: &Discovery,
        endpoint: &str,
        redirect_uri: &str,
    ) -> Result<ClientIdentity, AuthError> {
        let url = Url::parse(endpoint).map_err(|_| {
            AuthError::Registration("the registration endpoint is not a URL".to_owned())
        })?;
        check_safe(&url, "the registration endpoint")?;
        let mut grant_types = vec!["authorization_code"];
        if discovery
            .metadata
            .grant_types_supported
            .as_ref()
            .is_none_or(|g| g.iter().any(|g| g == "refresh_token"))
        {
            grant_types.push("refresh_token");
        }
        let body = serde_json::json!({
            "client_name": self.options.client_name,
            "redirect_uris": [redirect_uri],
            "grant_types": grant_types,
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "application_type": "native",
        });
        let client = http_client().map_err(|e| AuthError::Registration(e.to_string()))?;
        let response = client
            .post(url.clone())
            .json(&body)
            .timeout(OAUTH_TIMEOUT)
            .send()
            .await
            .map_err(|e| {
                AuthError::Registration(format!("{}: {}", origin_of(&url), describe(&e)))
            })?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| AuthError::Registration(describe(&e)))?;
        if !status.is_success() {
            let detail = serde_json::from_slice::<OAuthErrorBody>(&bytes)
                .map(|e| {
                    format!(
                        "{}{}",
                        e.error,
                        e.error_description
                            .map(|d| format!(": {}", cut(&d, 200)))
                            .unwrap_or_default()
                    )
                })
                .unwrap_or_else(|_| format!("HTTP {status}"));
            return Err(AuthError::Registration(detail));
        }
        #[derive(Deserialize)]
        struct Registered {
            client_id: String,
            #[serde(default)]
            client_secret: Option<String>,
            #[serde(default)]
            token_endpoint_auth_method: Option<String>,
        }
        let registered: Registered = serde_json::from_slice(&bytes)
            .map_err(|e| AuthError::Registration(format!("the answer is malformed: {e}")))?;
        let auth = match registered.token_endpoint_auth_method.as_deref() {
            Some("client_secret_basic") if registered.client_secret.is_some() => {
                ClientAuth::ClientSecretBasic
            }
            Some("client_secret_post") if registered.client_secret.is_some() => {
                ClientAuth::ClientSecretPost
            }
            Some("none") => ClientAuth::None,
            _ => choose_auth(
                registered.client_secret.is_some(),
                &discovery.metadata.token_endpoint_auth_methods_supported,
            ),
        };
        tracing::debug!(target: "switchboard::auth", server = %self.server, "registered a client");
        Ok(ClientIdentity {
            issuer: discovery.issuer.clone(),
            client_id: registered.client_id,
            client_secret: registered.client_secret,
            auth,
            redirect_uri: Some(redirect_uri.to_owned()),
        })
    }

    /// The authorization code flow with PKCE, through the loopback listener; stores and
    /// returns the tokens.
    async fn authorize(
        &self,
        challenge: &Challenge,
        extra_scopes: &[String],
    ) -> Result<Tokens, AuthError> {
        let client_http = http_client().map_err(|e| AuthError::Discovery(e.to_string()))?;
        let discovery = discover(&client_http, &self.url, challenge.resource_metadata()).await?;
        match &discovery.metadata.code_challenge_methods_supported {
            Some(methods) if methods.iter().any(|m| m == "S256") => {}
            Some(_) => {
                return Err(AuthError::Refused(
                    "the authorization server does not support PKCE with S256".to_owned(),
                ));
            }
            None => {
                return Err(AuthError::Refused(
                    "the authorization server metadata advertises no PKCE methods (code_challenge_methods_supported)".to_owned(),
                ));
            }
        }
        let authorization_endpoint = discovery.authorization_endpoint()?;
        let token_endpoint = discovery.token_endpoint()?;
        let callback = Callback::bind(self.config.callback_port).await?;
        let redirect_uri = callback.redirect_uri();
        let stored = self.options.store.load(&self.key).await?.client;
        let client = self.identity(&discovery, &redirect_uri, stored).await?;
        let scopes = self.scopes(Some(challenge), &discovery, extra_scopes);

        let state = random_token()?;
        let verifier = random_token()?;
        let code_challenge = URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()));
        let mut url = authorization_endpoint.clone();
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("code_challenge", &code_challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &state)
                .append_pair("resource", &discovery.resource);
            if !scopes.is_empty() {
                query.append_pair("scope", &scopes.join(" "));
            }
        }
        tracing::info!(target: "switchboard::auth", server = %self.server, authorization_server = %origin_of(&authorization_endpoint), "authorization needed; opening the browser");
        // The opener runs beside the listener: a browser stand-in that follows the redirect
        // only finishes once the listener has answered.
        let opening = self.options.opener.open(&self.server, url.as_str());
        let server = self.server.clone();
        tokio::spawn(async move {
            if let Err(e) = opening.await {
                tracing::warn!(target: "switchboard::auth", server = %server, "cannot open a browser ({e}); open the printed URL by hand");
            }
        });
        let params = callback.wait(self.options.login_timeout).await?;
        if params.get("state").map(String::as_str) != Some(state.as_str()) {
            return Err(AuthError::Refused(
                "the redirect's `state` does not match the request (a forged or stale redirect)"
                    .to_owned(),
            ));
        }
        check_iss(&params, &discovery)?;
        if let Some(error) = params.get("error") {
            let description = params
                .get("error_description")
                .map(|d| format!(": {}", cut(d, 200)))
                .unwrap_or_default();
            return Err(AuthError::Denied(format!("{error}{description}")));
        }
        let code = params.get("code").cloned().ok_or_else(|| {
            AuthError::Denied("the redirect carries no authorization code".to_owned())
        })?;
        let form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", redirect_uri.clone()),
            ("code_verifier", verifier),
            ("resource", discovery.resource.clone()),
        ];
        let response = self
            .token_request(&token_endpoint, &client, form)
            .await
            .map_err(TokenFailure::into_error)?;
        let requested = Some(scopes.join(" ")).filter(|s| !s.is_empty());
        let tokens = self.tokens_from(
            response,
            token_endpoint.as_str(),
            &discovery.resource,
            discovery.issuer.clone(),
            discovery.metadata.revocation_endpoint.clone(),
            None,
            requested,
        );
        let lock = self.options.store.lock().await?;
        self.options
            .store
            .save(
                &self.key,
                Some(Record {
                    client: Some(client),
                    tokens: Some(tokens.clone()),
                }),
            )
            .await?;
        drop(lock);
        tracing::info!(target: "switchboard::auth", server = %self.server, "authorized");
        self.remember(Some(&tokens));
        Ok(tokens)
    }

    /// A token endpoint request with the client's authentication, bounded by [`OAUTH_TIMEOUT`].
    async fn token_request(
        &self,
        endpoint: &Url,
        client: &ClientIdentity,
        params: Vec<(&'static str, String)>,
    ) -> Result<TokenResponse, TokenFailure> {
        let (status, bytes) = self
            .post_form(endpoint, client, params)
            .await
            .map_err(TokenFailure::Other)?;
        if !status.is_success() {
            return Err(match serde_json::from_slice::<OAuthErrorBody>(&bytes) {
                Ok(body) => TokenFailure::OAuth(body.error, body.error_description),
                Err(_) => TokenFailure::Other(AuthError::Token(format!(
                    "HTTP {status} from {}",
                    origin_of(endpoint)
                ))),
            });
        }
        let response: TokenResponse = serde_json::from_slice(&bytes).map_err(|_| {
            TokenFailure::Other(AuthError::Token(format!(
                "the answer from {} is not a token response",
                origin_of(endpoint)
            )))
        })?;
        if response
            .token_type
            .as_deref()
            .is_some_and(|t| !t.eq_ignore_ascii_case("bearer"))
        {
            return Err(TokenFailure::Other(AuthError::Token(
                "the token is not a bearer token".to_owned(),
            )));
        }
        Ok(response)
    }

    async fn post_form(
        &self,
        endpoint: &Url,
        client: &ClientIdentity,
        mut params: Vec<(&'static str, String)>,
    ) -> Result<(reqwest::StatusCode, Vec<u8>), AuthError> {
        check_safe(endpoint, "the token endpoint")?;
        let http = http_client().map_err(|e| AuthError::Token(e.to_string()))?;
        let mut request = http
            .post(endpoint.clone())
            .header(reqwest::header::ACCEPT, "application/json");
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
            .map_err(|e| AuthError::Token(format!("{}: {}", origin_of(endpoint), describe(&e))))?;
        let status = response.status();
        if status.is_redirection() {
            return Err(AuthError::Refused(format!(
                "the token endpoint at {} redirected",
                origin_of(endpoint)
            )));
        }
        let bytes = response
            .bytes()
            .await
            .map_err(|e| AuthError::Token(describe(&e)))?;
        Ok((status, bytes.to_vec()))
    }
}

impl Authorizer {
    /// An RFC 7523 client assertion: `iss` and `sub` the client id, `aud` the issuer (else the
    /// token endpoint), five minutes long, signed ES256 with the key from `oauth.privateKeyEnv`.
    fn client_assertion(
        &self,
        client: &ClientIdentity,
        endpoint: &Url,
    ) -> Result<String, AuthError> {
        let field = |why: String| {
            AuthError::Config(format!(
                "server `{}`, field `oauth.privateKeyEnv`: {why}",
                self.server
            ))
        };
        let var = self
            .config
            .private_key_env
            .as_deref()
            .ok_or_else(|| field("not set".to_owned()))?;
        let pem = self
            .env
            .get(var)
            .ok_or_else(|| field(format!("the environment variable `{var}` is not set")))?;
        let der: String = pem
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("-----"))
            .collect();
        let der = STANDARD
            .decode(der)
            .map_err(|_| field(format!("`{var}` does not hold a PEM key")))?;
        let rng = ring::rand::SystemRandom::new();
        let key = ring::signature::EcdsaKeyPair::from_pkcs8(
            &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &der,
            &rng,
        )
        .map_err(|_| field(format!("`{var}` does not hold a PKCS#8 P-256 key")))?;
        let now = now();
        let audience = client
            .issuer
            .clone()
            .unwrap_or_else(|| endpoint.to_string());
        let header = serde_json::json!({"alg": "ES256", "typ": "JWT"});
        let claims = serde_json::json!({
            "iss": client.client_id,
            "sub": client.client_id,
            "aud": audience,
            "iat": now,
            "exp": now + 300,
            "jti": random_token()?,
        });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = key
            .sign(&rng, signing_input.as_bytes())
            .map_err(|_| AuthError::Token("signing the client assertion failed".to_owned()))?;
        Ok(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        ))
    }
}

/// RFC 9207: an `iss` in the redirect must be the issuer, by simple string comparison; when
/// the server advertised it, it must be there.
fn check_iss(params: &BTreeMap<String, String>, discovery: &Discovery) -> Result<(), AuthError> {
    let advertised = discovery
        .metadata
        .authorization_response_iss_parameter_supported
        == Some(true);
    match (params.get("iss"), &discovery.issuer) {
        (Some(iss), Some(issuer)) if iss == issuer => Ok(()),
        (Some(_), _) => Err(AuthError::Refused(
            "the redirect's `iss` is not the authorization server's issuer (a mix-up attack?)"
                .to_owned(),
        )),
        (None, _) if advertised => Err(AuthError::Refused(
            "the authorization server promised an `iss` in the redirect and sent none".to_owned(),
        )),
        (None, _) => Ok(()),
    }
}

/// How a client with (or without) a secret authenticates, given what the server supports.
fn choose_auth(has_secret: bool, supported: &Option<Vec<String>>) -> ClientAuth {
    if !has_secret {
        return ClientAuth::None;
    }
    match supported {
        None => ClientAuth::ClientSecretBasic,
        Some(list) if list.iter().any(|m| m == "client_secret_basic") => {
            ClientAuth::ClientSecretBasic
        }
        Some(list) if list.iter().any(|m| m == "client_secret_post") => {
            ClientAuth::ClientSecretPost
        }
        Some(_) => ClientAuth::ClientSecretBasic,
    }
}

/// `application/x-www-form-urlencoded` of one value (RFC 6749 §2.3.1 for Basic credentials).
fn form_encode(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

/// 32 random bytes, base64url: a `state` or a PKCE verifier (43 characters).
fn random_token() -> Result<String, AuthError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| AuthError::Config(format!("no randomness: {e}")))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verifier_is_long_enough_and_random() {
        let a = random_token().unwrap_or_default();
        let b = random_token().unwrap_or_default();
        assert_eq!(a.len(), 43);
        assert_ne!(a, b);
    }

    #[test]
    fn auth_methods_follow_the_server() {
        assert_eq!(choose_auth(false, &None), ClientAuth::None);
        assert_eq!(choose_auth(true, &None), ClientAuth::ClientSecretBasic);
        assert_eq!(
            choose_auth(true, &Some(vec!["client_secret_post".to_owned()])),
            ClientAuth::ClientSecretPost
        );
        assert_eq!(form_encode("a b:c"), "a+b%3Ac");
    }
}
