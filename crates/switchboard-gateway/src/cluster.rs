//! Replicas: state sealed under a key the replicas share (`serve --cluster-key-file`).
//!
//! Replicas of `switchboard serve --http` behind a balancer share no memory: what one replica
//! hands a client and another must understand travels with the client, sealed. The key file
//! holds at least [`MIN_KEY_BYTES`] secret bytes, owner-only; the AEAD key (ChaCha20-Poly1305)
//! is derived from them with HKDF-SHA256 under a fixed label, so any content will do. A sealed
//! token is base64url (no padding) of a random 96-bit nonce and the ciphertext with its tag;
//! the associated data names what the token is ([`Purpose`]), so a session id never opens as
//! an input round's state or the other way round. Each token holds an expiry.
//!
//! Nothing a client sends is trusted unless it opens under the key: a forged, altered, expired
//! or foreign token opens to nothing ([`Cluster::open`] is `None`), and the request is treated
//! like one naming an unknown session or round.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::hkdf;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The fewest secret bytes a key file may hold.
pub(crate) const MIN_KEY_BYTES: usize = 32;

/// The HKDF salt and info: fixed, so every replica derives the same key from the same file.
const SALT: &[u8] = b"switchboard cluster key v1";
const INFO: &[u8] = b"switchboard sealed state: chacha20-poly1305";

/// What a sealed token is; its label is the token's associated data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// An initialize-era session's `Mcp-Session-Id`.
    Session,
    /// A 2026-07-28 input round's `requestState`.
    Round,
    /// The id of a question the fast path put to an initialize-era client during a call.
    Question,
    /// Callers' upstream tokens at rest (per-user credentials): the state folder's file, or
    /// each record in the shared store. Never expires.
    Tokens,
}

impl Purpose {
    fn label(self) -> &'static [u8] {
        match self {
            // v2: the session's owner is sealed with its `initialize` (an id of v1 is unknown).
            Purpose::Session => b"switchboard session v2",
            Purpose::Round => b"switchboard round v1",
            Purpose::Question => b"switchboard question v1",
            Purpose::Tokens => b"switchboard token records v1",
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterKeyError {
    #[error("the cluster key file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "the cluster key file {path} holds {len} bytes: it needs at least {MIN_KEY_BYTES} secret bytes \
         (make one with `head -c 32 /dev/urandom > {path}; chmod 600 {path}`)"
    )]
    Short { path: String, len: usize },
    #[error(
        "the cluster key file {path} is readable by other users (mode {mode:o}): make it owner-only \
         (`chmod 600 {path}`)"
    )]
    Readable { path: String, mode: u32 },
    #[error("no key could be derived from the cluster key file {path}")]
    Derive { path: String },
}

/// The key the replicas share, and where this replica is reached.
pub struct Cluster {
    key: LessSafeKey,
    /// `HOST:PORT` other replicas reach this one at (`--advertise-addr`, else the bound address).
    advertise: std::sync::OnceLock<String>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("Cluster")
            .field("advertise", &self.advertise.get())
            .finish_non_exhaustive()
    }
}

impl Cluster {
    /// Reads the key file at `path`: at least [`MIN_KEY_BYTES`] bytes, readable by its owner
    /// only.
    pub fn from_key_file(path: &Path) -> Result<Self, ClusterKeyError> {
        let shown = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|source| ClusterKeyError::Read {
            path: shown.clone(),
            source,
        })?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path)
                .map_err(|source| ClusterKeyError::Read {
                    path: shown.clone(),
                    source,
                })?
                .permissions()
                .mode();
            if mode & 0o077 != 0 {
                return Err(ClusterKeyError::Readable {
                    path: shown,
                    mode: mode & 0o777,
                });
            }
        }
        if bytes.len() < MIN_KEY_BYTES {
            return Err(ClusterKeyError::Short {
                path: shown,
                len: bytes.len(),
            });
        }
        Self::from_secret(&bytes).ok_or(ClusterKeyError::Derive { path: shown })
    }

    /// The key derived from `secret` (HKDF-SHA256, fixed salt and info).
    pub fn from_secret(secret: &[u8]) -> Option<Self> {
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, SALT).extract(secret);
        let okm = prk.expand(&[INFO], &CHACHA20_POLY1305).ok()?;
        Some(Cluster {
            key: LessSafeKey::new(UnboundKey::from(okm)),
            advertise: std::sync::OnceLock::new(),
        })
    }

    /// Sets the address other replicas reach this one at, once; `false` if it was set.
    pub fn set_advertise(&self, addr: String) -> bool {
        self.advertise.set(addr).is_ok()
    }

    /// The address other replicas reach this one at, once set.
    pub fn advertise(&self) -> Option<&str> {
        self.advertise.get().map(String::as_str)
    }

    /// `value` sealed for `purpose`, valid for `ttl`.
    pub fn seal<T: Serialize>(
        &self,
        purpose: Purpose,
        value: &T,
        ttl: Duration,
    ) -> Result<String, String> {
        let now = unix_now();
        let sealed = Sealed {
            iat: now,
            exp: now.saturating_add(ttl.as_secs()),
            value,
        };
        let buffer = serde_json::to_vec(&sealed).map_err(|e| e.to_string())?;
        self.seal_bytes(purpose, buffer)
    }

    /// `buffer` sealed for `purpose`: base64url of a random nonce and the ciphertext.
    fn seal_bytes(&self, purpose: Purpose, mut buffer: Vec<u8>) -> Result<String, String> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|e| format!("no random nonce: {e}"))?;
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(purpose.label()),
                &mut buffer,
            )
            .map_err(|_| "sealing failed".to_owned())?;
        let mut token = Vec::with_capacity(NONCE_LEN + buffer.len());
        token.extend_from_slice(&nonce);
        token.extend_from_slice(&buffer);
        Ok(URL_SAFE_NO_PAD.encode(token))
    }

    /// What `token` holds, if it was sealed under this key for `purpose` and has not expired.
    pub fn open<T: DeserializeOwned>(&self, purpose: Purpose, token: &str) -> Option<T> {
        // A token no replica would have made is not looked at further.
        if token.len() > MAX_TOKEN_CHARS {
            return None;
        }
        let plain = self.open_bytes(purpose, token)?;
        let sealed: Sealed<T> = serde_json::from_slice(&plain).ok()?;
        (sealed.exp > unix_now()).then_some(sealed.value)
    }

    /// What [`Self::seal_bytes`] sealed for `purpose`, if it opens under this key.
    fn open_bytes(&self, purpose: Purpose, token: &str) -> Option<Vec<u8>> {
        let mut bytes = URL_SAFE_NO_PAD.decode(token).ok()?;
        if bytes.len() < NONCE_LEN {
            return None;
        }
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&bytes[..NONCE_LEN]);
        let plain = self
            .key
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(purpose.label()),
                &mut bytes[NONCE_LEN..],
            )
            .ok()?;
        Some(plain.to_vec())
    }
}

/// Callers' token records sealed at rest under the cluster key ([`Purpose::Tokens`]): the
/// library's token store seals its file, or each record in the shared store, with it.
impl switchboard::auth::RecordSeal for Cluster {
    fn seal(&self, plain: &str) -> Result<String, String> {
        self.seal_bytes(Purpose::Tokens, plain.as_bytes().to_vec())
    }

    fn open(&self, sealed: &str) -> Option<String> {
        String::from_utf8(self.open_bytes(Purpose::Tokens, sealed)?).ok()
    }
}

/// The longest token looked at (a session's holds the client's capabilities and info).
pub(crate) const MAX_TOKEN_CHARS: usize = 16 * 1024;

#[derive(serde::Serialize, serde::Deserialize)]
struct Sealed<T> {
    iat: u64,
    exp: u64,
    #[serde(rename = "v")]
    value: T,
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_opens_only_under_its_key_purpose_and_unaltered() {
        let cluster = Cluster::from_secret(&[7u8; 32]).unwrap();
        let token = cluster
            .seal(Purpose::Session, &"hello", Duration::from_secs(60))
            .unwrap();
        assert!(
            token
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        assert_eq!(
            cluster.open::<String>(Purpose::Session, &token).as_deref(),
            Some("hello")
        );
        // The same secret on another replica opens it.
        let replica = Cluster::from_secret(&[7u8; 32]).unwrap();
        assert!(replica.open::<String>(Purpose::Session, &token).is_some());
        // Another key, another purpose, an altered byte, garbage: nothing, and no panic.
        let other = Cluster::from_secret(&[8u8; 32]).unwrap();
        assert!(other.open::<String>(Purpose::Session, &token).is_none());
        assert!(cluster.open::<String>(Purpose::Round, &token).is_none());
        let mut altered = token.clone().into_bytes();
        let last = altered.len() - 3;
        altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(altered).unwrap();
        assert!(cluster.open::<String>(Purpose::Session, &altered).is_none());
        for junk in ["", "x", "!!!", "AAAA", &"A".repeat(40_000)] {
            assert!(cluster.open::<String>(Purpose::Session, junk).is_none());
        }
        // Expired.
        let expired = cluster
            .seal(Purpose::Session, &"old", Duration::ZERO)
            .unwrap();
        assert!(cluster.open::<String>(Purpose::Session, &expired).is_none());
    }

    #[cfg(unix)]
    #[test]
    fn a_short_or_readable_key_file_is_refused_naming_the_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cluster.key");
        for (bytes, mode, says) in [
            (vec![1u8; 31], 0o600, "holds 31 bytes"),
            (vec![1u8; 32], 0o640, "readable by other users"),
        ] {
            std::fs::write(&path, &bytes).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let error = Cluster::from_key_file(&path).unwrap_err().to_string();
            assert!(error.contains(&path.display().to_string()), "{error}");
            assert!(error.contains(says), "{error}");
        }
        std::fs::write(&path, [1u8; 32]).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(Cluster::from_key_file(&path).is_ok());
        let missing = Cluster::from_key_file(&dir.path().join("nope")).unwrap_err();
        assert!(missing.to_string().contains("nope"), "{missing}");
    }
}
