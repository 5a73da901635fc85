//! Configured secrets: values a user gave that must not sit in a configuration file (an MCPB
//! bundle's `sensitive` `user_config` fields; the secret inputs of a server added from the MCP
//! Registry, which its entry names in `storedSecrets`). The same choice as the OAuth token store
//! (`SWITCHBOARD_TOKEN_STORE`): the OS keychain where one answers (service `switchboard`,
//! account `secret <key>`), else `secrets.json` in the state folder, owner-only (`0600` in a
//! `0700` folder), changed under a lock file and written atomically. With a keychain, the
//! file is still read when the keychain has no entry, and written when the keychain refuses
//! a write under `auto`.
//!
//! Synchronous: it is read while configuration loads. Values never appear in `Debug` output
//! or in error messages.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::env_vars::EnvVars;
use crate::environment::Environment;
use crate::keychain::Keychain;

const FILE_NAME: &str = "secrets.json";
const LOCK_NAME: &str = "secrets.lock";
/// How long a change waits for another process's.
const LOCK_WAIT: Duration = Duration::from_secs(30);

/// Why a secret could not be read or written (never the secret itself).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SecretError(String);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Auto,
    File,
    Keychain,
}

/// Where configured secrets are kept. Cheap to clone; the keychain is probed on first use.
#[derive(Debug, Clone)]
pub struct SecretStore {
    dir: PathBuf,
    kind: Result<Kind, String>,
}

impl SecretStore {
    /// The store `SWITCHBOARD_TOKEN_STORE` chooses, its file in `dir` (the state folder).
    pub fn from_env(dir: impl Into<PathBuf>, env: &Environment) -> SecretStore {
        let name = EnvVars::SWITCHBOARD_TOKEN_STORE;
        let kind = match env.get(name).map(str::trim).unwrap_or("") {
            "" | "auto" => Ok(Kind::Auto),
            "file" => Ok(Kind::File),
            "keychain" => Ok(Kind::Keychain),
            other => Err(format!("{name}={other} is not auto, file or keychain")),
        };
        SecretStore {
            dir: dir.into(),
            kind,
        }
    }

    /// The owner-only file only, in `dir`.
    pub fn in_dir(dir: impl Into<PathBuf>) -> SecretStore {
        SecretStore {
            dir: dir.into(),
            kind: Ok(Kind::File),
        }
    }

    /// The keychain to use, `None` for the file.
    fn keychain(&self) -> Result<Option<Keychain>, SecretError> {
        match &self.kind {
            Err(message) => Err(SecretError(message.clone())),
            Ok(Kind::File) => Ok(None),
            Ok(Kind::Auto) => Ok(Keychain::platform().ok()),
            Ok(Kind::Keychain) => Keychain::platform().map(Some).map_err(|why| {
                SecretError(format!(
                    "{}=keychain cannot be used: {why}",
                    EnvVars::SWITCHBOARD_TOKEN_STORE
                ))
            }),
        }
    }

    fn account(key: &str) -> String {
        format!("secret {key}")
    }

    /// Where the secrets live, for people: a keychain's name or the file's path.
    pub fn describe(&self) -> String {
        match self.keychain() {
            Ok(Some(keychain)) => keychain.name().to_owned(),
            Ok(None) => self.dir.join(FILE_NAME).display().to_string(),
            Err(e) => format!("unavailable: {e}"),
        }
    }

    /// The secret stored under `key`, if any.
    pub fn get(&self, key: &str) -> Result<Option<String>, SecretError> {
        if let Some(keychain) = self.keychain()? {
            match keychain.get(&Self::account(key)) {
                Ok(Some(secret)) => return Ok(Some(secret)),
                Ok(None) => {}
                Err(e) if self.kind == Ok(Kind::Auto) => {
                    tracing::debug!("cannot read {} ({e}); trying the file", keychain.name())
                }
                Err(e) => {
                    return Err(SecretError(format!("cannot read {}: {e}", keychain.name())));
                }
            }
        }
        Ok(read(&self.dir.join(FILE_NAME))?.remove(key))
    }

    /// Stores `value` under `key`, replacing what was there.
    pub fn set(&self, key: &str, value: &str) -> Result<(), SecretError> {
        if let Some(keychain) = self.keychain()? {
            match keychain.set(&Self::account(key), value) {
                // Not also in the file: an older value there would be read after a delete.
                Ok(()) => return self.forget_in_file(key),
                Err(e) if self.kind == Ok(Kind::Auto) => {
                    tracing::debug!("cannot write to {} ({e}); using the file", keychain.name())
                }
                Err(e) => {
                    return Err(SecretError(format!(
                        "cannot write to {}: {e}",
                        keychain.name()
                    )));
                }
            }
        }
        self.change_file(|all| {
            all.insert(key.to_owned(), value.to_owned());
            true
        })
    }

    /// Removes the secret under `key` (from the keychain and the file).
    pub fn delete(&self, key: &str) -> Result<(), SecretError> {
        if let Some(keychain) = self.keychain()? {
            keychain
                .delete(&Self::account(key))
                .map_err(|e| SecretError(format!("cannot delete from {}: {e}", keychain.name())))?;
        }
        self.forget_in_file(key)
    }

    /// Removes the stored values an entry named `server` names in its `storedSecrets` (its
    /// `raw` JSON), when it is removed; the variables removed come back.
    pub fn forget_entry(
        &self,
        server: &str,
        raw: &serde_json::Value,
    ) -> Result<Vec<String>, SecretError> {
        let vars = raw
            .get(STORED_SECRETS_KEY)
            .map(stored_secret_vars)
            .unwrap_or_default();
        for var in &vars {
            self.delete(&entry_secret_key(server, var))?;
        }
        Ok(vars)
    }

    /// Drops `key` from the file, when there is a file.
    fn forget_in_file(&self, key: &str) -> Result<(), SecretError> {
        if !self.dir.join(FILE_NAME).exists() {
            return Ok(());
        }
        self.change_file(|all| all.remove(key).is_some())
    }

    /// Reads, changes and (when `change` says it changed) writes the file, under its lock.
    fn change_file(
        &self,
        change: impl FnOnce(&mut BTreeMap<String, String>) -> bool,
    ) -> Result<(), SecretError> {
        let path = self.dir.join(FILE_NAME);
        ensure_dir(&self.dir)?;
        let _lock = lock(&self.dir)?;
        let mut all = read(&path)?;
        if change(&mut all) {
            write(&self.dir, &path, &all)?;
        }
        Ok(())
    }
}

/// The entry key naming the variables whose values are in the secret store: `"storedSecrets":
/// ["API_KEY"]` makes `${API_KEY}` in the entry expand to the stored value (before the
/// environment's). Read only for entries of the user's own files ([`reads_stored_secrets`]).
pub const STORED_SECRETS_KEY: &str = "storedSecrets";

/// The store key of variable `var` of the entry named `server`.
pub fn entry_secret_key(server: &str, var: &str) -> String {
    format!("entry {server} {var}")
}

/// The variables an entry's `storedSecrets` value names (text items only).
pub fn stored_secret_vars(value: &serde_json::Value) -> Vec<String> {
    value
        .as_array()
        .map(|vars| {
            vars.iter()
                .filter_map(serde_json::Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// `base` with each of `vars` set to its value stored for the entry named `server` (a value not
/// stored is left as `base` has it); stops at the first variable the store cannot read, which
/// comes back with the store's error.
pub(crate) fn stored_environment(
    store: &SecretStore,
    server: &str,
    vars: &[String],
    base: &Environment,
) -> (Environment, Option<(String, SecretError)>) {
    let mut env = base.clone();
    for var in vars {
        match store.get(&entry_secret_key(server, var)) {
            Ok(Some(value)) => env.set(var.clone(), value),
            Ok(None) => {}
            Err(e) => return (env, Some((var.clone(), e))),
        }
    }
    (env, None)
}

/// Whether entries of `scope` may read stored secrets: the user's own files only. A project's
/// file comes with a repository, and `--mcp-config` files or the administrator's could name
/// another entry's secrets to send them elsewhere.
pub fn reads_stored_secrets(scope: crate::config::Scope) -> bool {
    matches!(
        scope,
        crate::config::Scope::User | crate::config::Scope::Local
    )
}

fn ensure_dir(dir: &Path) -> Result<(), SecretError> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| SecretError(format!("cannot create {}: {e}", dir.display())))
}

/// The store's lock file, held until dropped (bounded wait).
fn lock(dir: &Path) -> Result<std::fs::File, SecretError> {
    let path = dir.join(LOCK_NAME);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| SecretError(format!("cannot open {}: {e}", path.display())))?;
    let deadline = Instant::now() + LOCK_WAIT;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(SecretError(format!(
                    "{} stayed locked for {} s",
                    path.display(),
                    LOCK_WAIT.as_secs()
                )));
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(SecretError(format!("cannot lock {}: {e}", path.display())));
            }
        }
    }
}

fn read(path: &Path) -> Result<BTreeMap<String, String>, SecretError> {
    if let Some(refused) = untrusted_file_message(path) {
        return Err(SecretError(refused));
    }
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| {
            SecretError(format!(
                "{} is not a secret store ({}:{})",
                path.display(),
                e.line(),
                e.column()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(e) => Err(SecretError(format!("cannot read {}: {e}", path.display()))),
    }
}

fn write(dir: &Path, path: &Path, all: &BTreeMap<String, String>) -> Result<(), SecretError> {
    let text = serde_json::to_string_pretty(all)
        .map_err(|e| SecretError(format!("cannot encode the secret store: {e}")))?;
    write_owner_only(dir, path, text.as_bytes())
        .map_err(|e| SecretError(format!("cannot write {}: {e}", path.display())))
}

/// Replaces `path` (in `dir`) with `contents`, atomically and `0600` whatever the old file's
/// mode was: the secret store's file and the token store's, and what a program keeps in the
/// state folder ([`Host::state_folder`](crate::Host::state_folder)).
pub fn write_owner_only(dir: &Path, path: &Path, contents: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    file.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(contents)?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Why a folder or file of the user's own (the state and config folders, approvals, trusted
/// projects, secrets) cannot be trusted: another user owns it, or its group or other users
/// may write to it, so another local user could have rewritten what it says. `None` when it
/// is safe, or absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Untrusted {
    /// What is wrong, without the path (`writable by other users (mode 0777)`).
    pub why: String,
    /// How to fix it: `chmod 700 PATH` for a folder, `chmod 600 PATH` for a file.
    pub hint: String,
}

/// [`Untrusted`] for `path` (followed if it is a link), `None` when it is the user's own and
/// only they may write to it, or when it does not exist.
pub fn untrusted(path: &Path) -> Option<Untrusted> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    let mode = meta.mode() & 0o7777;
    let dir = meta.is_dir();
    let chmod = format!(
        "chmod {} {}",
        if dir { "700" } else { "600" },
        path.display()
    );
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Some(Untrusted {
            why: format!(
                "owned by another user (uid {}, not {me}): they could rewrite it",
                meta.uid()
            ),
            hint: format!(
                "make it yours alone (`sudo chown $(id -u) {} && {chmod}`), or remove it",
                path.display()
            ),
        });
    }
    if mode & 0o022 != 0 {
        let who = if mode & 0o002 != 0 {
            "every user"
        } else {
            "its group"
        };
        return Some(Untrusted {
            why: format!("writable by {who} (mode {mode:04o}): another user could rewrite it"),
            hint: format!("make it yours only: `{chmod}`"),
        });
    }
    None
}

/// [`untrusted`] for a file and the folder holding it: the folder first (whoever may write
/// to it may replace the file).
pub fn untrusted_file(path: &Path) -> Option<(PathBuf, Untrusted)> {
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty());
    folder
        .and_then(|dir| untrusted(dir).map(|u| (dir.to_owned(), u)))
        .or_else(|| untrusted(path).map(|u| (path.to_owned(), u)))
}

/// [`untrusted_file`] as the refusal of a file of secrets (the secret store's, the token
/// store's): what is not used, why, and the hint.
pub(crate) fn untrusted_file_message(path: &Path) -> Option<String> {
    untrusted_file(path).map(|(at, why)| {
        format!(
            "{} is not used: it is {}\n  hint: {}",
            at.display(),
            why.why,
            why.hint
        )
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_file_round_trips_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let store = SecretStore::in_dir(dir.path().join("state"));
        assert_eq!(store.get("a").unwrap(), None);
        store.set("a", "s3cret").unwrap();
        store.set("b", "other").unwrap();
        assert_eq!(store.get("a").unwrap().as_deref(), Some("s3cret"));
        let path = dir.path().join("state").join(FILE_NAME);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        store.delete("a").unwrap();
        assert_eq!(store.get("a").unwrap(), None);
        assert_eq!(store.get("b").unwrap().as_deref(), Some("other"));
        assert!(!format!("{store:?}").contains("other"));
    }

    /// A secret store another user could have rewritten is not read (nor written through):
    /// the error names the folder or file and the `chmod` that makes it the user's alone.
    #[test]
    fn a_store_others_could_write_is_refused_with_the_chmod_that_fixes_it() {
        use std::os::unix::fs::PermissionsExt;
        let chmod = |path: &Path, mode: u32| {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let store = SecretStore::in_dir(&state);
        store.set("a", "s3cret").unwrap();
        let path = state.join(FILE_NAME);

        chmod(&path, 0o666);
        let refused = store.get("a").unwrap_err().to_string();
        assert!(!refused.contains("s3cret"));
        assert_eq!(
            refused,
            format!(
                "{} is not used: it is writable by every user (mode 0666): another user could \
                 rewrite it\n  hint: make it yours only: `chmod 600 {}`",
                path.display(),
                path.display()
            )
        );
        assert!(store.set("a", "forged").is_err());
        chmod(&path, 0o600);
        chmod(&state, 0o770);
        let refused = store.get("a").unwrap_err().to_string();
        assert!(
            refused.starts_with(&format!(
                "{} is not used: it is writable by its group (mode 0770)",
                state.display()
            )),
            "{refused}"
        );
        assert!(
            refused.ends_with(&format!("`chmod 700 {}`", state.display())),
            "{refused}"
        );
        chmod(&state, 0o700);
        assert_eq!(store.get("a").unwrap().as_deref(), Some("s3cret"));
    }

    /// What another user owns is not trusted, whatever its mode.
    #[test]
    fn what_another_user_owns_is_untrusted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("approvals.json");
        std::fs::write(&path, "{}").unwrap();
        assert_eq!(untrusted(&path), None);
        assert_eq!(untrusted(&dir.path().join("absent")), None);
        let theirs = if nix::unistd::geteuid().is_root() {
            // Root may give it away: to `nobody`.
            std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
            path.clone()
        } else {
            // Anyone else finds one: `/` is root's.
            PathBuf::from("/")
        };
        let why = untrusted(&theirs).unwrap();
        assert!(
            why.why.starts_with("owned by another user (uid "),
            "{why:?}"
        );
        assert!(why.hint.contains("or remove it"), "{why:?}");
    }
}
