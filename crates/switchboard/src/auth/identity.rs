//! Who the client is at an authorization server: a pre-registered client id (with a secret,
//! or a private key for `private_key_jwt`), a Client ID Metadata Document, or RFC 7591
//! dynamic registration; how it authenticates at the token endpoint; the RFC 7523 client
//! assertion.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use url::Url;

use super::discovery::{Discovery, check_safe};
use super::flow::random_token;
use super::store::{ClientAuth, ClientIdentity, now};
use super::{AuthCause, AuthError, Authorizer, OAUTH_TIMEOUT};
use crate::net::http_client;

impl Authorizer {
    /// A pre-registered client (`oauth.clientId`, the secret from `oauth.clientSecretEnv` or
    /// the keychain entry `oauth.clientSecretKeychain`).
    pub(super) async fn preregistered(
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
    pub(super) async fn identity(
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
        let url = Url::parse(endpoint).map_err(|_| AuthError::Registration {
            what: "the registration endpoint is not a URL".to_owned(),
            source: None,
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
        let client = http_client().map_err(|e| AuthError::Registration {
            what: e.to_string(),
            source: None,
        })?;
        let response = client
            .post(url.clone())
            .json(&body)
            .timeout(OAUTH_TIMEOUT)
            .send()
            .await
            .map_err(|e| AuthError::Registration {
                what: String::new(),
                source: Some(AuthCause::http(&url, e)),
            })?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| AuthError::Registration {
                what: String::new(),
                source: Some(AuthCause::http(&url, e)),
            })?;
        if !status.is_success() {
            return Err(AuthError::Registration {
                what: String::new(),
                source: Some(AuthCause::status(&url, status, &bytes)),
            });
        }
        #[derive(Deserialize)]
        struct Registered {
            client_id: String,
            #[serde(default)]
            client_secret: Option<String>,
            #[serde(default)]
            token_endpoint_auth_method: Option<String>,
        }
        let registered: Registered =
            serde_json::from_slice(&bytes).map_err(|e| AuthError::Registration {
                what: "the answer is malformed".to_owned(),
                source: Some(AuthCause::Json(e)),
            })?;
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

    /// An RFC 7523 client assertion: `iss` and `sub` the client id, `aud` the issuer (else the
    /// token endpoint), five minutes long, signed ES256 (by jsonwebtoken) with the key from
    /// `oauth.privateKeyEnv`.
    pub(super) fn client_assertion(
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
        // `encode` panics when jsonwebtoken has no backend: another crate in the build turned
        // on its other one too and installed none. Say so instead.
        if jsonwebtoken::crypto::CryptoProvider::try_get_default().is_none() {
            return Err(AuthError::Token {
                what: "signing the client assertion failed: jsonwebtoken has no crypto backend"
                    .to_owned(),
                source: None,
            });
        }
        #[derive(Serialize)]
        struct Claims<'a> {
            iss: &'a str,
            sub: &'a str,
            aud: &'a str,
            iat: u64,
            exp: u64,
            jti: String,
        }
        let now = now();
        let audience = client
            .issuer
            .clone()
            .unwrap_or_else(|| endpoint.to_string());
        let claims = Claims {
            iss: &client.client_id,
            sub: &client.client_id,
            aud: &audience,
            iat: now,
            exp: now + 300,
            jti: random_token()?,
        };
        let header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        let key = jsonwebtoken::EncodingKey::from_ec_der(&der);
        jsonwebtoken::encode(&header, &claims, &key).map_err(|e| match e.kind() {
            jsonwebtoken::errors::ErrorKind::InvalidEcdsaKey => {
                field(format!("`{var}` does not hold a PKCS#8 P-256 key"))
            }
            _ => AuthError::Token {
                what: "signing the client assertion failed".to_owned(),
                source: None,
            },
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_methods_follow_the_server() {
        assert_eq!(choose_auth(false, &None), ClientAuth::None);
        assert_eq!(choose_auth(true, &None), ClientAuth::ClientSecretBasic);
        assert_eq!(
            choose_auth(true, &Some(vec!["client_secret_post".to_owned()])),
            ClientAuth::ClientSecretPost
        );
    }

    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use ring::signature::{
        ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair,
        KeyPair, UnparsedPublicKey,
    };

    fn pem(der: &[u8]) -> String {
        let body = STANDARD.encode(der);
        let lines: Vec<&str> = body
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            lines.join("\n")
        )
    }

    fn authorizer(key: Option<&str>) -> Authorizer {
        let mut env = crate::config::Environment::default();
        if let Some(key) = key {
            env.set("CLIENT_KEY", key);
        }
        let config = crate::config::OAuthConfig {
            client_id: Some("client-1".to_owned()),
            private_key_env: Some("CLIENT_KEY".to_owned()),
            client_credentials: true,
            ..Default::default()
        };
        let url = Url::parse("https://mcp.example/mcp").unwrap();
        Authorizer::new(
            "guarded",
            &url,
            config,
            env,
            crate::auth::AuthOptions::default(),
        )
    }

    fn client(issuer: Option<&str>) -> ClientIdentity {
        ClientIdentity {
            issuer: issuer.map(str::to_owned),
            client_id: "client-1".to_owned(),
            client_secret: None,
            auth: ClientAuth::PrivateKeyJwt,
            redirect_uri: None,
        }
    }

    fn part(jwt: &str, i: usize) -> serde_json::Value {
        let part = jwt.split('.').nth(i).unwrap();
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
    }

    #[test]
    fn the_client_assertion_is_an_es256_jwt_for_the_issuer() {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        let authorizer = authorizer(Some(&pem(pkcs8.as_ref())));
        let endpoint = Url::parse("https://as.example/token").unwrap();

        let jwt = authorizer
            .client_assertion(&client(Some("https://as.example")), &endpoint)
            .unwrap();
        assert_eq!(jwt.split('.').count(), 3);
        let header = part(&jwt, 0);
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["typ"], "JWT");
        let claims = part(&jwt, 1);
        assert_eq!(claims["iss"], "client-1");
        assert_eq!(claims["sub"], "client-1");
        assert_eq!(claims["aud"], "https://as.example");
        let iat = claims["iat"].as_u64().unwrap();
        assert!(iat.abs_diff(now()) < 60);
        assert_eq!(claims["exp"].as_u64().unwrap(), iat + 300);
        assert_eq!(claims["jti"].as_str().unwrap().len(), 43);
        let (input, signature) = jwt.rsplit_once('.').unwrap();
        let signature = URL_SAFE_NO_PAD.decode(signature).unwrap();
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, pair.public_key().as_ref())
            .verify(input.as_bytes(), &signature)
            .unwrap();

        // Without an issuer the audience is the token endpoint; each assertion is new.
        let other = authorizer
            .client_assertion(&client(None), &endpoint)
            .unwrap();
        assert_eq!(part(&other, 1)["aud"], "https://as.example/token");
        assert_ne!(part(&other, 1)["jti"], claims["jti"]);
    }

    #[test]
    fn a_missing_or_wrong_key_names_the_setting() {
        let endpoint = Url::parse("https://as.example/token").unwrap();
        let message = |key: Option<&str>| {
            authorizer(key)
                .client_assertion(&client(None), &endpoint)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            message(None),
            "server `guarded`, field `oauth.privateKeyEnv`: the environment variable `CLIENT_KEY` is not set"
        );
        assert_eq!(
            message(Some("not a key!")),
            "server `guarded`, field `oauth.privateKeyEnv`: `CLIENT_KEY` does not hold a PEM key"
        );
        let rng = ring::rand::SystemRandom::new();
        let ed25519 = Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
        let ed25519 = pem(ed25519.as_ref());
        let text = message(Some(&ed25519));
        assert_eq!(
            text,
            "server `guarded`, field `oauth.privateKeyEnv`: `CLIENT_KEY` does not hold a PKCS#8 P-256 key"
        );
        let body = ed25519.lines().nth(1).unwrap();
        assert!(!text.contains(body), "the key stays out of the error");
    }
}
