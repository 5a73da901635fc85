//! The token store: per server (name and URL), the client identity and the tokens.
//!
//! Where the records live is chosen by `SWITCHBOARD_TOKEN_STORE` ([`StoreKind`]): the OS
//! keychain (`keychain.rs`), or a JSON file readable by the owner only (`0600` in a `0700`
//! folder), written atomically (temporary file + rename). `auto`, the default, uses the
//! keychain where one answers and the file otherwise. With a keychain, the file is still read
//! when the keychain has no entry (tokens stored before keep working; the next save moves
//! them), and written when the keychain refuses a write under `auto`.
//!
//! Whatever holds the records, changes happen under an exclusive lock on a sibling lock file,
//! so two Switchboard processes never both spend a rotating refresh token: the one that gets
//! the lock second re-reads the store and finds the new tokens. Without a state folder the
//! store lives in memory. Secrets never appear in `Debug` output or in error messages.
//!
//! With a [`SharedStore`] (gateway replicas sharing a Redis), records are the values of
//! `switchboard:tokens:<key>` and the lock is a Redis lock per record
//! (`switchboard:lock:tokens:<key>`): the same rule across machines.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::keychain::Keychain;
use super::{AuthCause, AuthError};
use crate::config::Environment;
use crate::env_vars::{EnvVarError, EnvVars};
use crate::shared::{PREFIX, SharedLock, SharedStore};

/// How long a process waits for another to finish a refresh.
const LOCK_WAIT: Duration = Duration::from_secs(30);
/// How often the lock is tried meanwhile.
const LOCK_POLL: Duration = Duration::from_millis(20);
/// How long a shared lock lives if its holder never releases it: longer than a refresh may
/// take (a token request is bounded by [`super::OAUTH_TIMEOUT`]).
const SHARED_LOCK_TTL: Duration = Duration::from_secs(90);

/// How a client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ClientAuth {
    None,
    ClientSecretBasic,
    ClientSecretPost,
    /// A signed JWT assertion (RFC 7523); the key comes from the environment, never stored.
    PrivateKeyJwt,
}

/// Who the client is at one authorization server.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct ClientIdentity {
    pub(crate) issuer: Option<String>,
    pub(crate) client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client_secret: Option<String>,
    pub(crate) auth: ClientAuth,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) redirect_uri: Option<String>,
}

impl std::fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientIdentity")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("auth", &self.auth)
            .finish_non_exhaustive()
    }
}

/// The tokens for one server.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Tokens {
    pub(crate) access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) refresh_token: Option<String>,
    /// Seconds since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) expires_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) scope: Option<String>,
    pub(crate) token_endpoint: String,
    pub(crate) resource: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) issuer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) revocation_endpoint: Option<String>,
    /// `Bearer` (also when absent) or `DPoP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) token_type: Option<String>,
    /// The DPoP proof key the tokens were requested with (PKCS#8 DER, base64url): a secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) dpop_key: Option<String>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .field("refresh", &self.refresh_token.is_some())
            .field("token_type", &self.token_type)
            .finish_non_exhaustive()
    }
}

impl Tokens {
    /// Whether the access token expires within `margin` (or has expired).
    pub(crate) fn expires_within(&self, margin: Duration) -> bool {
        self.expires_at
            .is_some_and(|at| at <= now().saturating_add(margin.as_secs()))
    }

    pub(crate) fn scopes(&self) -> Vec<String> {
        self.scope
            .as_deref()
            .unwrap_or("")
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    }
}

/// What is stored for one server.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Record {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client: Option<ClientIdentity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tokens: Option<Tokens>,
    /// Why the tokens were dropped (a refused refresh token), until new ones are stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) dropped: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct FileContents {
    #[serde(default)]
    servers: BTreeMap<String, Record>,
}

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// Which store holds the tokens (`SWITCHBOARD_TOKEN_STORE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum StoreKind {
    /// The OS keychain where one answers (probed once, bounded), else the file.
    #[default]
    Auto,
    /// The owner-only file only.
    File,
    /// The OS keychain (macOS Keychain, Windows Credential Manager, Linux Secret Service);
    /// an error when there is none, never a silent file.
    Keychain,
}

impl StoreKind {
    /// `SWITCHBOARD_TOKEN_STORE`: unset or empty is `auto`; anything unknown is an error.
    pub fn from_env(env: &Environment) -> Result<StoreKind, EnvVarError> {
        let name = EnvVars::SWITCHBOARD_TOKEN_STORE;
        match env.get(name).map(str::trim).unwrap_or("") {
            "" | "auto" => Ok(StoreKind::Auto),
            "file" => Ok(StoreKind::File),
            "keychain" => Ok(StoreKind::Keychain),
            other => Err(EnvVarError {
                name,
                value: other.to_owned(),
                expected: "auto, file or keychain",
            }),
        }
    }

    fn setting(self) -> &'static str {
        match self {
            StoreKind::Auto => "auto",
            StoreKind::File => "file",
            StoreKind::Keychain => "keychain",
        }
    }
}

/// Where tokens are kept. Cheap to clone.
#[derive(Clone)]
pub struct TokenStore {
    inner: Arc<Opened>,
    /// Seals what the file or the shared store holds ([`TokenStore::sealed`]).
    seal: Option<Arc<dyn RecordSeal>>,
}

/// Encrypts token records at rest (the gateway's cluster key, for its callers' tokens): a
/// store given one writes sealed text to its file (the whole file) or to the shared store (each
/// record), and opens what it reads; text written in the clear before is read as it is, and
/// sealed at the next write.
pub trait RecordSeal: Send + Sync {
    /// `plain` sealed, as text.
    fn seal(&self, plain: &str) -> Result<String, String>;
    /// What `sealed` holds, if it was sealed under this key.
    fn open(&self, sealed: &str) -> Option<String>;
}

/// The seal a store reads and writes with (`None`: in the clear).
type Seal = Option<Arc<dyn RecordSeal>>;

/// `text` as written: sealed when there is a seal.
fn seal_text(seal: &Seal, text: String) -> Result<String, AuthError> {
    match seal {
        Some(seal) => seal.seal(&text).map_err(|e| AuthError::Store {
            what: format!("cannot seal a token record: {e}"),
            source: None,
        }),
        None => Ok(text),
    }
}

/// What `text` (read from `place`) holds in the clear: opened with the seal when it is sealed.
/// JSON is read as it is (written before the seal was set); sealed text without the seal, or
/// under another key, is an error that says so.
fn open_text(seal: &Seal, text: String, place: &str) -> Result<String, AuthError> {
    if text.trim_start().starts_with('{') {
        return Ok(text);
    }
    match seal {
        Some(seal) => seal.open(text.trim()).ok_or_else(|| AuthError::Store {
            what: format!("{place} does not open under this cluster key (sealed under another?)"),
            source: None,
        }),
        None => Err(AuthError::Store {
            what: format!("{place} is sealed with a cluster key: serve with that key to read it"),
            source: None,
        }),
    }
}

/// A store, opened on first use: a keychain (on Linux, a D-Bus connection and its threads) is
/// probed only once a token is read or written, so a host with no remote server never loads
/// one.
struct Opened {
    cell: OnceLock<Inner>,
    /// What to open on first use; `None` when `cell` was filled at once.
    pending: Option<(PathBuf, StoreKind)>,
}

impl Opened {
    fn ready(inner: Inner) -> Arc<Opened> {
        Arc::new(Opened {
            cell: OnceLock::from(inner),
            pending: None,
        })
    }
}

enum Inner {
    File {
        dir: PathBuf,
    },
    /// Records in `keychain`; the file in `dir` is read when the keychain has none, and
    /// written when the keychain refuses and `fall_back` (the `auto` choice) is set.
    Keychain {
        dir: PathBuf,
        keychain: Keychain,
        fall_back: bool,
    },
    /// The chosen store cannot be used: every operation fails with this message.
    Unavailable {
        message: String,
    },
    Memory(Mutex<FileContents>),
    /// Records in the Redis the replicas share.
    Shared(SharedStore),
}

impl std::fmt::Debug for TokenStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Some(inner) = self.inner.cell.get() else {
            return f.write_str("TokenStore(not opened yet)");
        };
        match inner {
            Inner::File { dir } => f.debug_tuple("TokenStore").field(dir).finish(),
            Inner::Keychain { dir, keychain, .. } => f
                .debug_tuple("TokenStore")
                .field(keychain)
                .field(dir)
                .finish(),
            Inner::Unavailable { .. } => f.write_str("TokenStore(unavailable)"),
            Inner::Memory(_) => f.write_str("TokenStore(memory)"),
            Inner::Shared(store) => f.debug_tuple("TokenStore").field(store).finish(),
        }
    }
}

/// Opens the store of `kind` (not `File`, which needs no probing): the platform's keychain.
fn open_now(dir: PathBuf, kind: StoreKind) -> Inner {
    let chosen = match kind {
        StoreKind::File => return Inner::File { dir },
        StoreKind::Auto => match Keychain::platform() {
            Ok(keychain) => Ok(keychain),
            Err(why) => {
                tracing::debug!(
                    "no OS keychain for OAuth tokens ({why}); using {}",
                    dir.join(FILE_NAME).display()
                );
                return Inner::File { dir };
            }
        },
        StoreKind::Keychain => Keychain::platform(),
    };
    match chosen {
        Ok(keychain) => {
            tracing::debug!("OAuth tokens are kept in {}", keychain.name());
            Inner::Keychain {
                dir,
                keychain,
                fall_back: kind == StoreKind::Auto,
            }
        }
        Err(why) => Inner::Unavailable {
            message: format!(
                "{}={} cannot be used: {why}; set it to `file` (or `auto`) to keep tokens in {}",
                EnvVars::SWITCHBOARD_TOKEN_STORE,
                kind.setting(),
                dir.join(FILE_NAME).display()
            ),
        },
    }
}

const FILE_NAME: &str = "oauth-tokens.json";
const LOCK_NAME: &str = "oauth-tokens.lock";

impl TokenStore {
    /// A store in `dir` (created `0700` when missing): `oauth-tokens.json` and its lock.
    pub fn in_dir(dir: impl Into<PathBuf>) -> TokenStore {
        TokenStore {
            inner: Opened::ready(Inner::File { dir: dir.into() }),
            seal: None,
        }
    }

    /// The store `SWITCHBOARD_TOKEN_STORE` in `env` chooses, with its file and lock in `dir`.
    /// A malformed value gives a store whose every use fails with a message naming it.
    pub fn from_env(dir: impl Into<PathBuf>, env: &Environment) -> TokenStore {
        match StoreKind::from_env(env) {
            Ok(kind) => TokenStore::open(dir, kind),
            Err(e) => TokenStore {
                inner: Opened::ready(Inner::Unavailable {
                    message: e.to_string(),
                }),
                seal: None,
            },
        }
    }

    /// The store of `kind`, with its file (fallback, migration) and lock in `dir`. A keychain
    /// is looked for on first use.
    pub fn open(dir: impl Into<PathBuf>, kind: StoreKind) -> TokenStore {
        let dir = dir.into();
        if kind == StoreKind::File {
            return TokenStore::in_dir(dir);
        }
        TokenStore {
            inner: Arc::new(Opened {
                cell: OnceLock::new(),
                pending: Some((dir, kind)),
            }),
            seal: None,
        }
    }

    /// The store, opened now if it was not yet.
    fn inner(&self) -> &Inner {
        self.inner.cell.get_or_init(|| match &self.inner.pending {
            Some((dir, kind)) => open_now(dir.clone(), *kind),
            // Not reached: a store without `pending` is created filled.
            None => Inner::Unavailable {
                message: "the token store was not opened".to_owned(),
            },
        })
    }

    /// Records in the shared store (Redis), under `switchboard:tokens:<key>`, changed under
    /// a Redis lock.
    pub fn shared(store: SharedStore) -> TokenStore {
        TokenStore {
            inner: Opened::ready(Inner::Shared(store)),
            seal: None,
        }
    }

    /// A store that lasts as long as this process.
    pub fn in_memory() -> TokenStore {
        TokenStore {
            inner: Opened::ready(Inner::Memory(Mutex::default())),
            seal: None,
        }
    }

    /// This store, its file or its shared records sealed with `seal` from now on (what is
    /// read in the clear stays readable). A keychain's entries are the keychain's to protect.
    pub fn sealed(mut self, seal: Arc<dyn RecordSeal>) -> TokenStore {
        self.seal = Some(seal);
        self
    }

    /// The file tokens are written to (with a keychain: read from when it has no entry).
    pub fn path(&self) -> Option<PathBuf> {
        match self.inner() {
            Inner::File { dir } | Inner::Keychain { dir, .. } => Some(dir.join(FILE_NAME)),
            Inner::Unavailable { .. } | Inner::Memory(_) | Inner::Shared(_) => None,
        }
    }

    /// The shared store's URL (password masked) when the records live there.
    pub(crate) fn shared_url(&self) -> Option<&str> {
        match self.inner() {
            Inner::Shared(store) => Some(store.url()),
            _ => None,
        }
    }

    /// Where the records live, for people: a keychain's name, a file's path, ….
    pub fn describe(&self) -> String {
        match self.inner() {
            Inner::File { dir } => dir.join(FILE_NAME).display().to_string(),
            Inner::Keychain { keychain, .. } => keychain.name().to_owned(),
            Inner::Unavailable { message } => format!("unavailable: {message}"),
            Inner::Memory(_) => "memory".to_owned(),
            Inner::Shared(store) => store.url().to_owned(),
        }
    }

    /// A pre-registered client's secret from the keychain entry (service `switchboard`,
    /// account `account`): this store's keychain, else the platform's.
    pub(crate) async fn client_secret(
        &self,
        server: &str,
        account: &str,
    ) -> Result<String, AuthError> {
        let keychain = match self.inner() {
            Inner::Keychain { keychain, .. } => Ok(keychain.clone()),
            _ => Err(()),
        };
        let (server, account) = (server.to_owned(), account.to_owned());
        blocking(move || {
            let field = format!("server `{server}`, field `oauth.clientSecretKeychain`");
            let keychain = match keychain {
                Ok(keychain) => keychain,
                Err(()) => Keychain::platform()
                    .map_err(|why| AuthError::Config(format!("{field}: {why}")))?,
            };
            match keychain.get(&account) {
                Ok(Some(secret)) if !secret.trim().is_empty() => Ok(secret.trim().to_owned()),
                Ok(_) => Err(AuthError::Config(format!(
                    "{field}: {} has no entry for service `{}`, account `{account}`",
                    keychain.name(),
                    super::keychain::SERVICE
                ))),
                Err(e) => Err(AuthError::Config(format!(
                    "{field}: cannot read {}: {e}",
                    keychain.name()
                ))),
            }
        })
        .await
    }

    /// The record stored under `key`.
    pub(crate) async fn load(&self, key: &str) -> Result<Record, AuthError> {
        match self.inner() {
            Inner::File { dir } => {
                let path = dir.join(FILE_NAME);
                let (key, seal) = (key.to_owned(), self.seal.clone());
                blocking(move || {
                    Ok(read(&path, &seal)?
                        .servers
                        .remove(&key)
                        .unwrap_or_default())
                })
                .await
            }
            Inner::Keychain {
                dir,
                keychain,
                fall_back,
            } => {
                let path = dir.join(FILE_NAME);
                let (keychain, fall_back, key) = (keychain.clone(), *fall_back, key.to_owned());
                blocking(move || {
                    match keychain.get(&key) {
                        Ok(Some(secret)) => {
                            return serde_json::from_str(&secret).map_err(|_| {
                                AuthError::Store { what: format!(
                                    "the entry `{key}` in {} is not a token record; `switchboard mcp logout` of that server removes it",
                                    keychain.name()
                                ), source: None }
                            });
                        }
                        Ok(None) => {}
                        Err(e) if fall_back => tracing::debug!(
                            "cannot read {} ({e}); trying {}",
                            keychain.name(),
                            path.display()
                        ),
                        Err(e) => {
                            return Err(AuthError::Store { what: format!(
                                "cannot read {}: {e}",
                                keychain.name()
                            ), source: None });
                        }
                    }
                    // Not in the keychain: a record stored before it was chosen.
                    Ok(read(&path, &None)?.servers.remove(&key).unwrap_or_default())
                })
                .await
            }
            Inner::Unavailable { message } => Err(AuthError::Store { what: message.clone(), source: None }),
            Inner::Shared(store) => match store
                .get(&record_key(key))
                .await
                .map_err(|e| store_error("", e))?
            {
                Some(text) => serde_json::from_str(&open_text(
                    &self.seal,
                    text,
                    &format!("the entry `{}` in {}", record_key(key), store.url()),
                )?)
                .map_err(|_| {
                    AuthError::Store { what: format!(
                        "the entry `{}` in {} is not a token record; `switchboard mcp logout` of that server removes it",
                        record_key(key),
                        store.url()
                    ), source: None }
                }),
                None => Ok(Record::default()),
            },
            Inner::Memory(m) => Ok(m
                .lock()
                .servers
                .get(key)
                .cloned()
                .unwrap_or_default()),
        }
    }

    /// Takes the store's lock for the record `key` (bounded wait): only one process at a time
    /// changes it. A lock file (for every record), whichever local store holds the records;
    /// with a shared store, a Redis lock per record.
    pub(crate) async fn lock(&self, key: &str) -> Result<StoreLock, AuthError> {
        match self.inner() {
            Inner::Shared(store) => {
                let lock = store
                    .lock(&format!("tokens:{key}"), SHARED_LOCK_TTL, LOCK_WAIT)
                    .await
                    .map_err(|e| store_error("", e))?;
                Ok(StoreLock {
                    _file: None,
                    _shared: Some(lock),
                })
            }
            Inner::File { dir } | Inner::Keychain { dir, .. } => {
                ensure_dir(dir)?;
                let path = dir.join(LOCK_NAME);
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .truncate(false)
                    .write(true)
                    .open(&path)
                    .map_err(|e| store_error(format!("cannot open {}", path.display()), e))?;
                let deadline = tokio::time::Instant::now() + LOCK_WAIT;
                loop {
                    match file.try_lock() {
                        Ok(()) => {
                            return Ok(StoreLock {
                                _file: Some(file),
                                _shared: None,
                            });
                        }
                        Err(std::fs::TryLockError::WouldBlock) => {
                            if tokio::time::Instant::now() >= deadline {
                                return Err(AuthError::Store {
                                    what: format!(
                                        "another process held {} for more than {LOCK_WAIT:?}",
                                        path.display()
                                    ),
                                    source: None,
                                });
                            }
                            tokio::time::sleep(LOCK_POLL).await;
                        }
                        Err(std::fs::TryLockError::Error(e)) => {
                            return Err(store_error(format!("cannot lock {}", path.display()), e));
                        }
                    }
                }
            }
            Inner::Unavailable { message } => Err(AuthError::Store {
                what: message.clone(),
                source: None,
            }),
            Inner::Memory(_) => Ok(StoreLock {
                _file: None,
                _shared: None,
            }),
        }
    }

    /// Replaces the record under `key` (`None` removes it, from the keychain and the file).
    /// Call it holding [`Self::lock`].
    pub(crate) async fn save(&self, key: &str, record: Option<Record>) -> Result<(), AuthError> {
        match self.inner() {
            Inner::File { dir } => {
                let (dir, key, seal) = (dir.clone(), key.to_owned(), self.seal.clone());
                blocking(move || save_file(&dir, key, record, &seal)).await
            }
            Inner::Keychain {
                dir,
                keychain,
                fall_back,
            } => {
                let (dir, keychain, fall_back) = (dir.clone(), keychain.clone(), *fall_back);
                let key = key.to_owned();
                blocking(move || {
                    let written = match &record {
                        Some(record) => {
                            let text =
                                serde_json::to_string(record).map_err(|_| AuthError::Store {
                                    what: "cannot encode a token record".to_owned(),
                                    source: None,
                                })?;
                            keychain.set(&key, &text)
                        }
                        None => keychain.delete(&key).map(|_| ()),
                    };
                    match written {
                        // In the keychain (or gone from it): no copy stays in the file.
                        Ok(()) => remove_from_file(&dir, &key),
                        Err(e) if fall_back => {
                            tracing::debug!(
                                "cannot write to {} ({e}); using {}",
                                keychain.name(),
                                dir.join(FILE_NAME).display()
                            );
                            save_file(&dir, key, record, &None)
                        }
                        Err(e) => Err(AuthError::Store {
                            what: format!("cannot write to {}: {e}", keychain.name()),
                            source: None,
                        }),
                    }
                })
                .await
            }
            Inner::Unavailable { message } => Err(AuthError::Store {
                what: message.clone(),
                source: None,
            }),
            Inner::Shared(store) => {
                let key = record_key(key);
                match record {
                    Some(record) => {
                        let text =
                            serde_json::to_string(&record).map_err(|_| AuthError::Store {
                                what: "cannot encode a token record".to_owned(),
                                source: None,
                            })?;
                        store.set(&key, &seal_text(&self.seal, text)?).await
                    }
                    None => store.delete(&key).await,
                }
                .map_err(|e| store_error("", e))
            }
            Inner::Memory(m) => {
                let mut contents = m.lock();
                match record {
                    Some(record) => contents.servers.insert(key.to_owned(), record),
                    None => contents.servers.remove(key),
                };
                Ok(())
            }
        }
    }
}

impl TokenStore {
    /// Keeps a hosted login's `pending` text under its `state` in the shared store for `ttl`
    /// (sealed when this store seals), for the replica its redirect reaches. `Ok(false)`:
    /// this store is not shared, the program keeps it itself.
    pub(crate) async fn put_login(
        &self,
        state: &str,
        pending: String,
        ttl: Duration,
    ) -> Result<bool, AuthError> {
        let Inner::Shared(store) = self.inner() else {
            return Ok(false);
        };
        let text = seal_text(&self.seal, pending)?;
        store
            .set_expiring(&login_key(state), &text, ttl)
            .await
            .map_err(|e| store_error("", e))?;
        Ok(true)
    }

    /// The login kept under `state` by [`Self::put_login`], taken (once): `None` when it is
    /// not there (expired, taken, never made) or the store is not shared.
    pub(crate) async fn take_login(&self, state: &str) -> Result<Option<String>, AuthError> {
        let Inner::Shared(store) = self.inner() else {
            return Ok(None);
        };
        match store
            .take(&login_key(state))
            .await
            .map_err(|e| store_error("", e))?
        {
            Some(text) => Ok(Some(open_text(&self.seal, text, "a kept login")?)),
            None => Ok(None),
        }
    }
}

/// The shared store's key of a login waiting for its redirect: a hash of its `state`.
fn login_key(state: &str) -> String {
    use sha2::Digest;
    format!(
        "{PREFIX}login:{}",
        hex::encode(sha2::Sha256::digest(state.as_bytes()))
    )
}

/// The store failed on `cause`: `what` it was doing, when the cause does not say.
fn store_error(what: impl Into<String>, cause: impl Into<AuthCause>) -> AuthError {
    AuthError::Store {
        what: what.into(),
        source: Some(cause.into()),
    }
}

/// Runs file or keychain work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, AuthError> + Send + 'static,
) -> Result<T, AuthError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| AuthError::Store {
            what: format!("the token store's task failed: {e}"),
            source: None,
        })?
}

fn save_file(
    dir: &Path,
    key: String,
    record: Option<Record>,
    seal: &Seal,
) -> Result<(), AuthError> {
    let path = dir.join(FILE_NAME);
    let mut contents = read(&path, seal)?;
    match record {
        Some(record) => contents.servers.insert(key, record),
        None => contents.servers.remove(&key),
    };
    write(dir, &path, &contents, seal)
}

/// Drops `key` from the file when the file has it (a record now in the keychain, or removed).
fn remove_from_file(dir: &Path, key: &str) -> Result<(), AuthError> {
    let path = dir.join(FILE_NAME);
    let mut contents = read(&path, &None)?;
    if contents.servers.remove(key).is_some() {
        write(dir, &path, &contents, &None)?;
    }
    Ok(())
}

/// The shared store's key of the record `key`.
fn record_key(key: &str) -> String {
    format!("{PREFIX}tokens:{key}")
}

/// Held while a process changes the store; dropping it releases the lock.
#[derive(Debug)]
pub(crate) struct StoreLock {
    _file: Option<std::fs::File>,
    _shared: Option<SharedLock>,
}

fn ensure_dir(dir: &Path) -> Result<(), AuthError> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| store_error(format!("cannot create {}", dir.display()), e))
}

fn read(path: &Path, seal: &Seal) -> Result<FileContents, AuthError> {
    // Tokens another user could have written (or replaced) are not used: they could point
    // a server's requests at tokens of theirs, or be swapped at the next refresh.
    if let Some(refused) = crate::secrets::untrusted_file_message(path) {
        return Err(AuthError::Store {
            what: refused,
            source: None,
        });
    }
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&open_text(seal, text, &path.display().to_string())?)
            .map_err(|e| AuthError::Store {
                what: format!(
                    "{} is not a token store ({}:{}); remove it to log in again",
                    path.display(),
                    e.line(),
                    e.column()
                ),
                source: None,
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(FileContents::default()),
        Err(e) => Err(store_error(format!("cannot read {}", path.display()), e)),
    }
}

fn write(dir: &Path, path: &Path, contents: &FileContents, seal: &Seal) -> Result<(), AuthError> {
    ensure_dir(dir)?;
    let text = serde_json::to_string_pretty(contents)
        .map_err(|e| store_error("cannot encode the token store", e))?;
    let text = seal_text(seal, text)?;
    crate::secrets::write_owner_only(dir, path, text.as_bytes())
        .map_err(|e| store_error(format!("cannot write {}", path.display()), e))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn tokens(access: &str) -> Tokens {
        Tokens {
            access_token: access.to_owned(),
            refresh_token: Some("r".to_owned()),
            expires_at: Some(now() + 10),
            scope: Some("a b".to_owned()),
            token_endpoint: "http://127.0.0.1/token".to_owned(),
            resource: "http://127.0.0.1/mcp".to_owned(),
            issuer: None,
            revocation_endpoint: None,
            token_type: None,
            dpop_key: None,
        }
    }

    #[tokio::test]
    async fn the_file_is_owner_only_and_round_trips() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::in_dir(dir.path().join("state"));
        let record = Record {
            client: None,
            tokens: Some(tokens("secret-access")),
            dropped: None,
        };
        let lock = store.lock("k").await.unwrap();
        store.save("k", Some(record.clone())).await.unwrap();
        drop(lock);
        assert_eq!(store.load("k").await.unwrap(), record);
        let path = store.path().unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dir_mode, 0o700);
        assert!(!format!("{record:?}").contains("secret-access"));
        assert!(tokens("x").expires_within(Duration::from_secs(60)));
        assert!(!tokens("x").expires_within(Duration::from_secs(1)));
    }

    #[cfg(all(target_os = "linux", not(feature = "secret-service")))]
    fn record(access: &str) -> Record {
        Record {
            client: None,
            tokens: Some(tokens(access)),
            dropped: None,
        }
    }

    #[cfg(all(target_os = "linux", not(feature = "secret-service")))]
    fn file_text(store: &TokenStore) -> String {
        std::fs::read_to_string(store.path().unwrap()).unwrap_or_default()
    }

    /// A build of the library without Secret Service support (`cargo test -p switchboard`;
    /// a workspace build gets the CLI's default feature, and the CLI's tests cover the same
    /// through a dead D-Bus address): `auto` is the owner-only file, `keychain` an error
    /// that names the setting.
    #[cfg(all(target_os = "linux", not(feature = "secret-service")))]
    #[tokio::test]
    async fn without_a_keychain_auto_is_the_file_and_keychain_is_an_error() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let auto = TokenStore::open(&state, StoreKind::Auto);
        assert_eq!(auto.describe(), state.join(FILE_NAME).display().to_string());
        let lock = auto.lock("k").await.unwrap();
        auto.save("k", Some(record("auto-access"))).await.unwrap();
        drop(lock);
        assert!(file_text(&auto).contains("auto-access"));
        let mode = std::fs::metadata(auto.path().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);

        let explicit = TokenStore::open(&state, StoreKind::Keychain);
        let err = explicit.load("k").await.unwrap_err().to_string();
        assert!(err.contains("SWITCHBOARD_TOKEN_STORE=keychain"), "{err}");
        assert!(err.contains("Secret Service"), "{err}");
        assert!(!err.contains("auto-access"), "{err}");
        let err = explicit.lock("k").await.unwrap_err().to_string();
        assert!(err.contains("SWITCHBOARD_TOKEN_STORE=keychain"), "{err}");
    }

    #[tokio::test]
    async fn the_setting_is_read_from_the_environment() {
        let env = |v: &str| Environment::from_iter([(EnvVars::SWITCHBOARD_TOKEN_STORE, v)]);
        assert_eq!(StoreKind::from_env(&env("")).unwrap(), StoreKind::Auto);
        assert_eq!(StoreKind::from_env(&env("file")).unwrap(), StoreKind::File);
        assert_eq!(
            StoreKind::from_env(&env("keychain")).unwrap(),
            StoreKind::Keychain
        );
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::from_env(dir.path(), &env("vault"));
        let err = store.load("k").await.unwrap_err().to_string();
        assert!(err.contains("SWITCHBOARD_TOKEN_STORE"), "{err}");
        assert!(err.contains("vault"), "{err}");
        let file = TokenStore::from_env(dir.path(), &env("file"));
        assert_eq!(
            file.describe(),
            dir.path().join(FILE_NAME).display().to_string()
        );
    }
}
