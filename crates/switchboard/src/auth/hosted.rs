//! Logins a program hosts for the people it serves (the gateway's per-user credentials,
//! `"credentials": "per-user"`): the authorization code flow with PKCE whose redirect comes to
//! the program's own URL (the gateway's `/oauth/callback`) rather than to a loopback listener.
//! [`Authorizer::begin_hosted`] makes the authorization URL and what the redirect needs
//! ([`Pending`], kept by the program under the login's `state`);
//! [`Authorizer::finish_hosted`] checks the redirect and exchanges its code, storing the
//! tokens under the caller's own key ([`user_key`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use url::Url;

use super::dpop::DpopKey;
use super::flow::{
    AuthorizationRequest, authorization_request, check_iss, check_pkce, iss_promised, redirect_code,
};
use super::store::{ClientIdentity, Record};
use super::tokens::TokenFailure;
use super::{AuthError, Authorizer, Challenge};
use crate::net::http_client;

/// How long a hosted login waits for its redirect.
pub(crate) const HOSTED_LOGIN_TTL: std::time::Duration = std::time::Duration::from_secs(600);

/// The token store's key of `user`'s tokens for the server `server` at `url`: the server's
/// own key (name and URL) and the user, so no two callers, and no caller and the shared
/// login, ever share a record. A server's name has no space and a URL none either: the user
/// part is everything after them.
pub(crate) fn user_key(server_key: &str, user: &str) -> String {
    format!("{server_key} user:{user}")
}

/// What a hosted login keeps from its start to its redirect: who began it, and what the code
/// exchange needs. Holds the PKCE verifier (and a pre-registered client's secret): kept by
/// the program only, sealed where it leaves the process.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct Pending {
    /// The caller who began it (the inbound subject): the tokens are stored as theirs.
    pub(crate) user: String,
    /// The server.
    pub(crate) server: String,
    verifier: String,
    redirect_uri: String,
    client: ClientIdentity,
    token_endpoint: String,
    resource: String,
    issuer: Option<String>,
    iss_promised: bool,
    revocation_endpoint: Option<String>,
    dpop: bool,
    scope: Option<String>,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("user", &self.user)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// A hosted login just begun: the URL the user opens, the `state` its redirect carries, and
/// what to keep under that state until then.
#[derive(Debug)]
pub(crate) struct Begun {
    /// The authorization server's page.
    pub(crate) url: String,
    /// The redirect's `state`: the key [`Pending`] is kept under.
    pub(crate) state: String,
    /// Kept until the redirect.
    pub(crate) pending: Pending,
}

impl Authorizer {
    /// This server's authorization for `user` (an inbound caller): their own tokens, under
    /// [`user_key`].
    pub(crate) fn for_user(mut self, user: &str) -> Self {
        self.key = user_key(&self.key, user);
        self.user = Some(user.to_owned());
        self
    }

    /// Begins `user`'s login with the redirect to `redirect_uri` (the program's callback):
    /// discovery, the client (registered for that redirect where need be, kept in the user's
    /// record), PKCE S256 and a fresh `state`.
    pub(crate) async fn begin_hosted(
        &self,
        user: &str,
        redirect_uri: &str,
    ) -> Result<Begun, AuthError> {
        let client_http = http_client().map_err(|e| AuthError::Discovery {
            what: e.to_string(),
            source: None,
        })?;
        let www = self.probe_challenge().await;
        let challenge = Challenge::parse(www.as_deref().unwrap_or(""));
        let discovery = self
            .discover(&client_http, challenge.resource_metadata())
            .await?;
        check_pkce(&discovery)?;
        let authorization_endpoint = discovery.authorization_endpoint()?;
        let token_endpoint = discovery.token_endpoint()?;
        let stored = self.options.store.load(&self.key).await?.client;
        let client = self.identity(&discovery, redirect_uri, stored).await?;
        let scopes = self.scopes(Some(&challenge), &discovery, &[]);
        let AuthorizationRequest {
            url,
            state,
            verifier,
        } = authorization_request(
            &authorization_endpoint,
            &client.client_id,
            redirect_uri,
            &discovery.resource,
            &scopes,
        )?;
        tracing::info!(target: "switchboard::auth", server = %self.server, "a caller's login begins");
        Ok(Begun {
            url: url.to_string(),
            state,
            pending: Pending {
                user: user.to_owned(),
                server: self.server.clone(),
                verifier,
                redirect_uri: redirect_uri.to_owned(),
                client,
                token_endpoint: token_endpoint.to_string(),
                resource: discovery.resource.clone(),
                issuer: discovery.issuer.clone(),
                iss_promised: iss_promised(&discovery),
                revocation_endpoint: discovery.metadata.revocation_endpoint.clone(),
                dpop: super::dpop::offered(
                    discovery
                        .metadata
                        .dpop_signing_alg_values_supported
                        .as_deref(),
                ),
                scope: Some(scopes.join(" ")).filter(|s| !s.is_empty()),
            },
        })
    }

    /// Finishes the login `pending` kept, with the redirect's query `params` (its `state`
    /// already matched): the `iss` check, the code exchange with the verifier, and the tokens
    /// stored under this authorizer's (the user's) key.
    pub(crate) async fn finish_hosted(
        &self,
        pending: Pending,
        params: &BTreeMap<String, String>,
    ) -> Result<(), AuthError> {
        check_iss(params, pending.issuer.as_deref(), pending.iss_promised)?;
        let code = redirect_code(params)?;
        let endpoint = Url::parse(&pending.token_endpoint).map_err(|_| {
            AuthError::Config("the token endpoint of the login is not a URL".to_owned())
        })?;
        let form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", pending.redirect_uri.clone()),
            ("code_verifier", pending.verifier.clone()),
            ("resource", pending.resource.clone()),
        ];
        let dpop = if pending.dpop {
            Some(DpopKey::generate()?)
        } else {
            None
        };
        let response = self
            .token_request(&endpoint, &pending.client, form, dpop.as_ref())
            .await
            .map_err(TokenFailure::into_error)?;
        let mut tokens = self.tokens_from(
            response,
            &pending.token_endpoint,
            &pending.resource,
            pending.issuer.clone(),
            pending.revocation_endpoint.clone(),
            None,
            pending.scope.clone(),
        );
        tokens.dpop_key = dpop.as_ref().map(|key| key.stored().to_owned());
        let lock = self.options.store.lock(&self.key).await?;
        self.options
            .store
            .save(
                &self.key,
                Some(Record {
                    client: Some(pending.client),
                    tokens: Some(tokens.clone()),
                    dropped: None,
                }),
            )
            .await?;
        drop(lock);
        tracing::info!(target: "switchboard::auth", server = %self.server, "a caller logged in");
        self.remember(Some(&tokens));
        Ok(())
    }

    /// Whether tokens are stored under this authorizer's key.
    pub(crate) async fn has_tokens(&self) -> Result<bool, AuthError> {
        Ok(self.options.store.load(&self.key).await?.tokens.is_some())
    }
}
