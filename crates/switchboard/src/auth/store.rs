//! The token store: per server (name and URL), the client identity and the tokens.
//!
//! A JSON file readable by the owner only (`0600` in a `0700` folder), written atomically
//! (temporary file + rename). Changes happen under an exclusive lock on a sibling lock file,
//! so two Switchboard processes never both spend a rotating refresh token: the one that gets
//! the lock second re-reads the file and finds the new tokens. Without a state folder the
//! store lives in memory. Secrets never appear in `Debug` output.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::AuthError;

/// How long a process waits for another to finish a refresh.
const LOCK_WAIT: Duration = Duration::from_secs(30);
/// How often the lock is tried meanwhile.
const LOCK_POLL: Duration = Duration::from_millis(20);

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
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .field("refresh", &self.refresh_token.is_some())
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

/// Where tokens are kept. Cheap to clone.
#[derive(Clone)]
pub struct TokenStore {
    inner: Arc<Inner>,
}

enum Inner {
    File { dir: PathBuf },
    Memory(Mutex<FileContents>),
}

impl std::fmt::Debug for TokenStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &*self.inner {
            Inner::File { dir } => f.debug_tuple("TokenStore").field(dir).finish(),
            Inner::Memory(_) => f.write_str("TokenStore(memory)"),
        }
    }
}

impl TokenStore {
    /// A store in `dir` (created `0700` when missing): `oauth-tokens.json` and its lock.
    pub fn in_dir(dir: impl Into<PathBuf>) -> TokenStore {
        TokenStore {
            inner: Arc::new(Inner::File { dir: dir.into() }),
        }
    }

    /// A store that lasts as long as this process.
    pub fn in_memory() -> TokenStore {
        TokenStore {
            inner: Arc::new(Inner::Memory(Mutex::default())),
        }
    }

    /// The file tokens are written to, when the store is a file.
    pub fn path(&self) -> Option<PathBuf> {
        match &*self.inner {
            Inner::File { dir } => Some(dir.join("oauth-tokens.json")),
            Inner::Memory(_) => None,
        }
    }

    /// The record stored under `key`.
    pub(crate) async fn load(&self, key: &str) -> Result<Record, AuthError> {
        match &*self.inner {
            Inner::File { dir } => {
                let path = dir.join("oauth-tokens.json");
                let contents = tokio::task::spawn_blocking(move || read(&path))
                    .await
                    .map_err(|e| {
                        AuthError::Store(format!("reading the token store failed: {e}"))
                    })??;
                Ok(contents.servers.get(key).cloned().unwrap_or_default())
            }
            Inner::Memory(m) => Ok(m
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .servers
                .get(key)
                .cloned()
                .unwrap_or_default()),
        }
    }

    /// Takes the store's lock (bounded wait): only one process at a time changes it.
    pub(crate) async fn lock(&self) -> Result<StoreLock, AuthError> {
        match &*self.inner {
            Inner::File { dir } => {
                ensure_dir(dir)?;
                let path = dir.join("oauth-tokens.lock");
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .truncate(false)
                    .write(true)
                    .open(&path)
                    .map_err(|e| {
                        AuthError::Store(format!("cannot open {}: {e}", path.display()))
                    })?;
                let deadline = tokio::time::Instant::now() + LOCK_WAIT;
                loop {
                    match file.try_lock() {
                        Ok(()) => return Ok(StoreLock { _file: Some(file) }),
                        Err(std::fs::TryLockError::WouldBlock) => {
                            if tokio::time::Instant::now() >= deadline {
                                return Err(AuthError::Store(format!(
                                    "another process held {} for more than {LOCK_WAIT:?}",
                                    path.display()
                                )));
                            }
                            tokio::time::sleep(LOCK_POLL).await;
                        }
                        Err(std::fs::TryLockError::Error(e)) => {
                            return Err(AuthError::Store(format!(
                                "cannot lock {}: {e}",
                                path.display()
                            )));
                        }
                    }
                }
            }
            Inner::Memory(_) => Ok(StoreLock { _file: None }),
        }
    }

    /// Replaces the record under `key` (`None` removes it). Call it holding [`Self::lock`].
    pub(crate) async fn save(&self, key: &str, record: Option<Record>) -> Result<(), AuthError> {
        match &*self.inner {
            Inner::File { dir } => {
                let dir = dir.clone();
                let key = key.to_owned();
                tokio::task::spawn_blocking(move || {
                    let path = dir.join("oauth-tokens.json");
                    let mut contents = read(&path)?;
                    match record {
                        Some(record) => contents.servers.insert(key, record),
                        None => contents.servers.remove(&key),
                    };
                    write(&dir, &path, &contents)
                })
                .await
                .map_err(|e| AuthError::Store(format!("writing the token store failed: {e}")))?
            }
            Inner::Memory(m) => {
                let mut contents = m.lock().unwrap_or_else(PoisonError::into_inner);
                match record {
                    Some(record) => contents.servers.insert(key.to_owned(), record),
                    None => contents.servers.remove(key),
                };
                Ok(())
            }
        }
    }
}

/// Held while a process changes the store; dropping it releases the lock.
#[derive(Debug)]
pub(crate) struct StoreLock {
    _file: Option<std::fs::File>,
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
        .map_err(|e| AuthError::Store(format!("cannot create {}: {e}", dir.display())))
}

fn read(path: &Path) -> Result<FileContents, AuthError> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| {
            AuthError::Store(format!(
                "{} is not a token store ({}:{}); remove it to log in again",
                path.display(),
                e.line(),
                e.column()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(FileContents::default()),
        Err(e) => Err(AuthError::Store(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

fn write(dir: &Path, path: &Path, contents: &FileContents) -> Result<(), AuthError> {
    use std::os::unix::fs::PermissionsExt;
    ensure_dir(dir)?;
    let text = serde_json::to_string_pretty(contents)
        .map_err(|e| AuthError::Store(format!("cannot encode the token store: {e}")))?;
    let fail =
        |e: std::io::Error| AuthError::Store(format!("cannot write {}: {e}", path.display()));
    // tempfile creates the file 0600; it is renamed over the old one.
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(fail)?;
    file.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(fail)?;
    file.write_all(text.as_bytes()).map_err(fail)?;
    file.as_file().sync_all().map_err(fail)?;
    file.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
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
        };
        let lock = store.lock().await.unwrap();
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
}
