//! One server's authorization: the [`Authorizer`]'s public API (tokens before requests, a 401,
//! step-up, login, logout) and the authorization code flow itself (PKCE S256, `state`, the
//! RFC 9207 `iss` check). Who the client is lives in `identity.rs`; token requests, refresh
//! and client credentials in `tokens.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use parking_lot::Mutex;
use sha2::Digest;
use url::Url;

use super::callback::Callback;
use super::discovery::{Discovery, discover, origin_of};
use super::dpop::DpopKey;
use super::store::{Record, Tokens};
use super::tokens::TokenFailure;
use super::{
    AuthError, AuthOptions, Challenge, MAX_STEP_UPS, OAUTH_TIMEOUT, REFRESH_MARGIN, login_hint_in,
};
use crate::config::{Environment, OAuthConfig};
use crate::net::{cut, http_client};

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
    pub(super) server: String,
    pub(super) url: Url,
    pub(super) key: String,
    pub(super) config: OAuthConfig,
    pub(super) env: Environment,
    pub(super) options: AuthOptions,
    /// The tokens as last read or written (`None`: not read yet), so a request does not read
    /// the store file; a 401 re-reads it under the lock.
    pub(super) cached: Mutex<Option<Option<Tokens>>>,
    pub(super) step_ups: AtomicU32,
    /// Serialises refreshes and flows within this process (the store lock does it across).
    pub(super) busy: tokio::sync::Mutex<()>,
    /// The server speaks legacy HTTP+SSE: its challenge comes on the event stream's GET.
    pub(super) legacy_sse: bool,
    /// The last DPoP nonce the authorization server and the resource server asked for.
    pub(super) as_nonce: Mutex<Option<String>>,
    rs_nonce: Mutex<Option<String>>,
    /// The DPoP key last read from the store, with its stored form.
    dpop_key: Mutex<Option<(String, Arc<DpopKey>)>>,
    /// The caller whose tokens these are ([`Self::for_user`]), for a per-user server.
    pub(super) user: Option<String>,
    /// The callers' latest access tokens at the gateway, for token exchange.
    pub(super) subject_tokens: Option<super::SubjectTokens>,
}

/// How a request presents the access token: the `Authorization` value and, for a DPoP-bound
/// token, the `DPoP` proof. Never printed.
pub struct Presentation {
    /// `Bearer <token>` or `DPoP <token>`.
    pub authorization: String,
    /// The value of the `DPoP` header.
    pub proof: Option<String>,
}

impl std::fmt::Debug for Presentation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Presentation")
            .field("dpop", &self.proof.is_some())
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer")
            .field("server", &self.server)
            .field("url", &origin_of(&self.url))
            .finish_non_exhaustive()
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
            busy: tokio::sync::Mutex::new(()),
            legacy_sse: false,
            as_nonce: Mutex::new(None),
            rs_nonce: Mutex::new(None),
            dpop_key: Mutex::new(None),
            user: None,
            subject_tokens: None,
        }
    }

    /// Where token exchange (`oauth.tokenExchange`) finds the caller's own access token.
    pub(crate) fn with_subject_tokens(mut self, tokens: super::SubjectTokens) -> Self {
        self.subject_tokens = Some(tokens);
        self
    }

    /// The caller's latest access token at the gateway, for token exchange.
    pub(super) fn subject_token(&self) -> Option<String> {
        let user = self.user.as_deref()?;
        self.subject_tokens.as_ref()?.lock().get(user).cloned()
    }

    /// The DPoP key stored as `stored`, parsed once.
    pub(super) fn dpop_key(&self, stored: &str) -> Result<Arc<DpopKey>, AuthError> {
        if let Some((known, key)) = self.dpop_key.lock().as_ref()
            && known == stored
        {
            return Ok(key.clone());
        }
        let key = Arc::new(DpopKey::from_stored(stored)?);
        *self.dpop_key.lock() = Some((stored.to_owned(), key.clone()));
        Ok(key)
    }

    /// How a `method` request to `url` presents `token` (one [`access_token`] or
    /// [`unauthorized`] gave): as a bearer token, or — when it is DPoP-bound — with the DPoP
    /// scheme and a fresh proof carrying the server's last nonce.
    ///
    /// [`access_token`]: Self::access_token
    /// [`unauthorized`]: Self::unauthorized
    pub fn present(&self, token: &str, method: &str, url: &Url) -> Result<Presentation, AuthError> {
        // The key of the cached tokens when `token` is theirs and DPoP-bound (looked at in
        // place: most requests present a bearer token, and copy nothing).
        let stored = self
            .cached
            .lock()
            .as_ref()
            .and_then(Option::as_ref)
            .filter(|tokens| {
                tokens.access_token == token
                    && tokens
                        .token_type
                        .as_deref()
                        .is_some_and(|k| k.eq_ignore_ascii_case("dpop"))
            })
            .and_then(|tokens| tokens.dpop_key.clone());
        let Some(stored) = stored else {
            return Ok(Presentation {
                authorization: format!("Bearer {token}"),
                proof: None,
            });
        };
        let key = self.dpop_key(&stored)?;
        let nonce = self.rs_nonce.lock().clone();
        Ok(Presentation {
            authorization: format!("DPoP {token}"),
            proof: Some(key.proof(method, url, Some(token), nonce.as_deref())?),
        })
    }

    /// After a 401 or 400 from the server: when its challenge is `use_dpop_nonce` and it sent a
    /// `DPoP-Nonce`, the nonce later proofs carry. Returns whether the request should be sent
    /// again with it.
    pub fn dpop_nonce(&self, www_authenticate: Option<&str>, nonce: Option<&str>) -> bool {
        let Some(nonce) = nonce.filter(|n| !n.is_empty()) else {
            return false;
        };
        let asked = Challenge::parse(www_authenticate.unwrap_or("")).get("error")
            == Some(super::dpop::USE_DPOP_NONCE);
        let mut slot = self.rs_nonce.lock();
        let changed = slot.as_deref() != Some(nonce);
        *slot = Some(nonce.to_owned());
        asked && changed
    }

    /// Whether a challenge asks for a DPoP nonce (`use_dpop_nonce`).
    pub fn wants_dpop_nonce(www_authenticate: Option<&str>) -> bool {
        Challenge::parse(www_authenticate.unwrap_or("")).get("error")
            == Some(super::dpop::USE_DPOP_NONCE)
    }

    /// Whether the server speaks legacy HTTP+SSE (`"type": "sse"`): the login's first,
    /// unauthenticated request is then the event stream's GET rather than a POST.
    pub fn legacy_sse(mut self, legacy_sse: bool) -> Self {
        self.legacy_sse = legacy_sse;
        self
    }

    pub fn server(&self) -> &str {
        &self.server
    }

    pub(super) fn needs_login(&self, why: &str) -> AuthError {
        if self.user.is_some() {
            // A caller's own tokens: the caller logs in (through the program that serves them).
            return AuthError::NeedsLogin(format!(
                "{why}; the caller logs in with their own account"
            ));
        }
        let hint = login_hint_in(&self.server, self.options.store.shared_url());
        AuthError::NeedsLogin(format!("{why}; {hint}"))
    }

    pub(super) fn remember(&self, tokens: Option<&Tokens>) {
        let mut cached = self.cached.lock();
        *cached = Some(tokens.cloned());
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
        let cached = self.cached.lock().clone();
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
            _ if self.without_browser() => self.grant_without_browser(None).await.map(Some),
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
                if self.without_browser() {
                    return self.grant_without_browser(Some(&challenge)).await;
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

    /// The server refused a token just renewed after a 401: the grant is gone.
    pub fn refused_after_renewal(&self) -> AuthError {
        self.needs_login("the server refused the access token, and the renewed one too")
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
        if self.without_browser() {
            return self.grant_without_browser(Some(&challenge)).await;
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
        if self.without_browser() {
            self.grant_without_browser(Some(&challenge)).await?;
        } else {
            self.authorize(&challenge, &[]).await?;
        }
        Ok(())
    }

    /// `switchboard mcp logout`: revokes the tokens where the server offers revocation (best
    /// effort) and forgets them. Returns whether anything was stored.
    pub async fn logout(&self) -> Result<bool, AuthError> {
        let _busy = self.busy.lock().await;
        let lock = self.options.store.lock(&self.key).await?;
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
    pub(super) async fn probe_challenge(&self) -> Option<String> {
        let client = http_client().ok()?;
        if self.legacy_sse {
            let response = client
                .get(self.url.clone())
                .header(reqwest::header::ACCEPT, "text/event-stream")
                .timeout(OAUTH_TIMEOUT)
                .send()
                .await
                .ok()?;
            // The stream itself (a server that wants no token) is dropped unread.
            return (response.status() == reqwest::StatusCode::UNAUTHORIZED)
                .then(|| crate::net::www_authenticate(response.headers()))
                .flatten();
        }
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
            crate::net::www_authenticate(response.headers())
        } else {
            None
        }
    }

    /// The scopes to ask for: configured ones, else the challenge's, else the resource's
    /// `scopes_supported`; plus `extra` (step-up); plus `offline_access` where the
    /// authorization server offers it (for a refresh token).
    pub(super) fn scopes(
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
            && !self.without_browser()
            && !scopes.iter().any(|s| s == "offline_access")
        {
            scopes.push("offline_access".to_owned());
        }
        scopes
    }

    /// The authorization code flow with PKCE, through the loopback listener; stores and
    /// returns the tokens.
    async fn authorize(
        &self,
        challenge: &Challenge,
        extra_scopes: &[String],
    ) -> Result<Tokens, AuthError> {
        let client_http = http_client().map_err(|e| AuthError::Discovery {
            what: e.to_string(),
            source: None,
        })?;
        let discovery = self
            .discover(&client_http, challenge.resource_metadata())
            .await?;
        check_pkce(&discovery)?;
        let authorization_endpoint = discovery.authorization_endpoint()?;
        let token_endpoint = discovery.token_endpoint()?;
        let callback = Callback::bind(self.config.callback_port).await?;
        let redirect_uri = callback.redirect_uri();
        let stored = self.options.store.load(&self.key).await?.client;
        let client = self.identity(&discovery, &redirect_uri, stored).await?;
        let scopes = self.scopes(Some(challenge), &discovery, extra_scopes);

        let AuthorizationRequest {
            url,
            state,
            verifier,
        } = authorization_request(
            &authorization_endpoint,
            &client.client_id,
            &redirect_uri,
            &discovery.resource,
            &scopes,
        )?;
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
        check_iss(
            &params,
            discovery.issuer.as_deref(),
            iss_promised(&discovery),
        )?;
        let code = redirect_code(&params)?;
        let form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", redirect_uri.clone()),
            ("code_verifier", verifier),
            ("resource", discovery.resource.clone()),
        ];
        // DPoP where the authorization server offers it: a new key for the new tokens.
        let dpop = if super::dpop::offered(
            discovery
                .metadata
                .dpop_signing_alg_values_supported
                .as_deref(),
        ) {
            Some(DpopKey::generate()?)
        } else {
            None
        };
        let response = self
            .token_request(&token_endpoint, &client, form, dpop.as_ref())
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
        let mut tokens = tokens;
        tokens.dpop_key = dpop.as_ref().map(|key| key.stored().to_owned());
        let lock = self.options.store.lock(&self.key).await?;
        self.options
            .store
            .save(
                &self.key,
                Some(Record {
                    client: Some(client),
                    tokens: Some(tokens.clone()),
                    dropped: None,
                }),
            )
            .await?;
        drop(lock);
        tracing::info!(target: "switchboard::auth", server = %self.server, "authorized");
        self.remember(Some(&tokens));
        Ok(tokens)
    }
}

impl Authorizer {
    /// Discovery for this server, with what its entry's `oauth` gives instead: the
    /// authorization and token endpoints (both given: a server whose authorization server
    /// publishes no usable metadata still logs in) and the `resource` parameter.
    pub(super) async fn discover(
        &self,
        client: &reqwest::Client,
        resource_metadata: Option<&str>,
    ) -> Result<Discovery, AuthError> {
        let config = &self.config;
        let given = config.authorization_endpoint.is_some() && config.token_endpoint.is_some();
        let mut discovery = match discover(client, &self.url, resource_metadata).await {
            Ok(discovery) => discovery,
            Err(e) if given => {
                tracing::info!(target: "switchboard::auth", server = %self.server,
                    "no usable authorization server metadata ({}); using the endpoints the entry gives",
                    crate::error_chain(&e));
                Discovery::given(&self.url)
            }
            Err(e) => return Err(e),
        };
        if let Some(endpoint) = &config.authorization_endpoint {
            discovery.metadata.authorization_endpoint = Some(endpoint.clone());
        }
        if let Some(endpoint) = &config.token_endpoint {
            discovery.metadata.token_endpoint = Some(endpoint.clone());
        }
        match &config.resource {
            Some(crate::config::OAuthResource::Given(resource)) => {
                discovery.resource.clone_from(resource);
            }
            Some(crate::config::OAuthResource::Omitted) => discovery.resource.clear(),
            None => {}
        }
        Ok(discovery)
    }
}

/// PKCE with S256, which the authorization server must advertise.
pub(super) fn check_pkce(discovery: &Discovery) -> Result<(), AuthError> {
    match &discovery.metadata.code_challenge_methods_supported {
        Some(methods) if methods.iter().any(|m| m == "S256") => Ok(()),
        Some(_) => Err(AuthError::Refused(
            "the authorization server does not support PKCE with S256".to_owned(),
        )),
        None => Err(AuthError::Refused(
            "the authorization server metadata advertises no PKCE methods (code_challenge_methods_supported)".to_owned(),
        )),
    }
}

/// Whether the authorization server promised an `iss` in its redirects (RFC 9207).
pub(super) fn iss_promised(discovery: &Discovery) -> bool {
    discovery
        .metadata
        .authorization_response_iss_parameter_supported
        == Some(true)
}

/// An authorization code request (PKCE, S256) to open in the browser: its URL, and the
/// `state` and code verifier its redirect and code exchange are checked against.
pub(super) struct AuthorizationRequest {
    pub(super) url: url::Url,
    pub(super) state: String,
    pub(super) verifier: String,
}

/// The authorization request of `client_id` at `endpoint`, redirected to `redirect_uri`, for
/// `resource` (RFC 8707, when not empty) and `scopes`: a user's login and a gateway caller's
/// ([`super::hosted`]) alike.
pub(super) fn authorization_request(
    endpoint: &url::Url,
    client_id: &str,
    redirect_uri: &str,
    resource: &str,
    scopes: &[String],
) -> Result<AuthorizationRequest, AuthError> {
    let state = random_token()?;
    let verifier = random_token()?;
    let code_challenge = URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()));
    let mut url = endpoint.clone();
    {
        let mut query = url.query_pairs_mut();
        query
            .append_pair("response_type", "code")
            .append_pair("client_id", client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("code_challenge", &code_challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", &state);
        if !resource.is_empty() {
            query.append_pair("resource", resource);
        }
        if !scopes.is_empty() {
            query.append_pair("scope", &scopes.join(" "));
        }
    }
    Ok(AuthorizationRequest {
        url,
        state,
        verifier,
    })
}

/// The authorization code a login's redirect brings, or the authorization server's refusal
/// (`error`, and its `error_description` cut short) that it brings instead.
pub(super) fn redirect_code(params: &BTreeMap<String, String>) -> Result<String, AuthError> {
    if let Some(error) = params.get("error") {
        let description = params
            .get("error_description")
            .map(|d| format!(": {}", cut(d, 200)))
            .unwrap_or_default();
        return Err(AuthError::Denied(format!("{error}{description}")));
    }
    params
        .get("code")
        .cloned()
        .ok_or_else(|| AuthError::Denied("the redirect carries no authorization code".to_owned()))
}

/// RFC 9207: an `iss` in the redirect must be the issuer, by simple string comparison; when
/// the server `advertised` it, it must be there.
pub(super) fn check_iss(
    params: &BTreeMap<String, String>,
    issuer: Option<&str>,
    advertised: bool,
) -> Result<(), AuthError> {
    match (params.get("iss"), issuer) {
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

/// 32 random bytes, base64url: a `state` or a PKCE verifier (43 characters).
pub(super) fn random_token() -> Result<String, AuthError> {
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
}
