//! DPoP (RFC 9449): proof-of-possession keys and proofs, so that a stolen access token is of no
//! use without the key.
//!
//! - A server's authorization server that advertises `ES256` in
//!   `dpop_signing_alg_values_supported` gets a proof on every token request, made with a P-256
//!   key created at login (from `getrandom`'s bytes) and stored beside the tokens (owner-only,
//!   never logged). A token whose `token_type` is `DPoP` is then presented as
//!   `Authorization: DPoP <token>` with a fresh proof of the request's method and URL and the
//!   token's hash (`ath`) on every request.
//! - A `use_dpop_nonce` answer (a 400 from the token endpoint, a 401 from the server) carries
//!   the nonce in `DPoP-Nonce`: the request is made once more with it, and later proofs to that
//!   server carry it.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header, jwk::Jwk};
use p256::pkcs8::EncodePrivateKey;
use serde::Serialize;
use sha2::Digest;
use url::Url;

use super::AuthError;
use super::flow::random_token;
use super::store::now;

/// The header of a proof.
pub(crate) const DPOP: &str = "dpop";
/// The header a server's nonce comes in.
pub(crate) const DPOP_NONCE: &str = "dpop-nonce";
/// The error code of a server that wants a nonce in the proof.
pub(crate) const USE_DPOP_NONCE: &str = "use_dpop_nonce";
/// The one algorithm Switchboard signs proofs with.
pub(crate) const ALGORITHM: &str = "ES256";

/// One server's proof key.
pub(crate) struct DpopKey {
    key: EncodingKey,
    jwk: Jwk,
    /// PKCS#8 DER, base64url: how the key is stored.
    stored: String,
}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DpopKey(…)")
    }
}

#[derive(Serialize)]
struct Claims<'a> {
    jti: String,
    htm: &'a str,
    htu: String,
    iat: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    ath: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nonce: Option<&'a str>,
}

impl DpopKey {
    /// A new random P-256 key.
    pub(crate) fn generate() -> Result<DpopKey, AuthError> {
        // A random 32-byte string is a valid scalar but for odds of about 2^-32; try again then.
        for _ in 0..4 {
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes)
                .map_err(|e| AuthError::Config(format!("no randomness: {e}")))?;
            if let Ok(key) = p256::ecdsa::SigningKey::from_slice(&bytes) {
                let der = key
                    .to_pkcs8_der()
                    .map_err(|_| AuthError::Config("cannot encode the DPoP key".to_owned()))?;
                return DpopKey::from_der(der.as_bytes());
            }
        }
        Err(AuthError::Config("cannot make a DPoP key".to_owned()))
    }

    /// The key as [`stored`](Self::stored) wrote it.
    pub(crate) fn from_stored(stored: &str) -> Result<DpopKey, AuthError> {
        let der = URL_SAFE_NO_PAD
            .decode(stored)
            .map_err(|_| AuthError::Store {
                what: "the stored DPoP key is not base64url".to_owned(),
                source: None,
            })?;
        DpopKey::from_der(&der)
    }

    fn from_der(der: &[u8]) -> Result<DpopKey, AuthError> {
        if jsonwebtoken::crypto::CryptoProvider::try_get_default().is_none() {
            return Err(AuthError::Token {
                what: "signing a DPoP proof: jsonwebtoken has no crypto backend".to_owned(),
                source: None,
            });
        }
        let key = EncodingKey::from_ec_der(der);
        let jwk = Jwk::from_encoding_key(&key, Algorithm::ES256).map_err(|_| AuthError::Store {
            what: "the DPoP key is not a P-256 key".to_owned(),
            source: None,
        })?;
        Ok(DpopKey {
            key,
            jwk,
            stored: URL_SAFE_NO_PAD.encode(der),
        })
    }

    /// The key for the token store (a secret, like the tokens beside it).
    pub(crate) fn stored(&self) -> &str {
        &self.stored
    }

    /// A fresh proof (RFC 9449 §4.2) of a `method` request to `url` (its query and fragment
    /// left out), presenting `access_token` (its hash as `ath`) and carrying the server's
    /// `nonce` when given.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &Url,
        access_token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<String, AuthError> {
        let mut htu = url.clone();
        htu.set_query(None);
        htu.set_fragment(None);
        let claims = Claims {
            jti: random_token()?,
            htm: method,
            htu: htu.to_string(),
            iat: now(),
            ath: access_token
                .map(|token| URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(token.as_bytes()))),
            nonce,
        };
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("dpop+jwt".to_owned());
        header.jwk = Some(self.jwk.clone());
        jsonwebtoken::encode(&header, &claims, &self.key).map_err(|_| AuthError::Token {
            what: "signing a DPoP proof failed".to_owned(),
            source: None,
        })
    }
}

/// Whether an authorization server's metadata offers DPoP with an algorithm Switchboard signs.
pub(crate) fn offered(algorithms: Option<&[String]>) -> bool {
    algorithms.is_some_and(|algs| algs.iter().any(|a| a == ALGORITHM))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn part(token: &str, n: usize) -> serde_json::Value {
        let bytes = URL_SAFE_NO_PAD
            .decode(token.split('.').nth(n).unwrap())
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn a_proof_names_the_request_and_verifies_with_its_own_key() {
        let key = DpopKey::generate().unwrap();
        let url = Url::parse("https://mcp.example/mcp?x=1#f").unwrap();
        let proof = key.proof("POST", &url, Some("tok"), Some("n1")).unwrap();
        let header = part(&proof, 0);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["jwk"]["kty"], "EC");
        assert_eq!(header["jwk"]["crv"], "P-256");
        assert!(header["jwk"].get("d").is_none(), "no private part");
        let claims = part(&proof, 1);
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example/mcp");
        assert_eq!(claims["nonce"], "n1");
        assert_eq!(
            claims["ath"],
            URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(b"tok"))
        );
        let jwk: Jwk = serde_json::from_value(header["jwk"].clone()).unwrap();
        let decoding = jsonwebtoken::DecodingKey::from_jwk(&jwk).unwrap();
        let mut validation = jsonwebtoken::Validation::new(Algorithm::ES256);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        jsonwebtoken::decode::<serde_json::Value>(&proof, &decoding, &validation).unwrap();

        // Fresh each time; the stored key is the same key.
        let again = key.proof("POST", &url, Some("tok"), None).unwrap();
        assert_ne!(part(&again, 1)["jti"], claims["jti"]);
        let restored = DpopKey::from_stored(key.stored()).unwrap();
        assert_eq!(
            part(&restored.proof("GET", &url, None, None).unwrap(), 0)["jwk"],
            header["jwk"]
        );
    }
}
