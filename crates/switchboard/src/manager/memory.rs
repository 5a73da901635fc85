//! What the manager remembers across runs, in the state directory: which protocol generation
//! answered each server (so the probe runs once), and which servers need authorization (for
//! 15 minutes, so a restart does not prompt again). Both are bound to the entry's hash: an
//! edited entry (a fixed header, a new URL) starts fresh.
//!
//! Several processes share the file: a change is written under the file's edit lock, applied to
//! the file as it is on disk then, so one process's records never erase another's.
//!
//! With a [`SharedStore`], needs-auth records are also `switchboard:needs-auth:<server>` in
//! Redis, expiring with their TTL: read for every server at start (one `MGET`), written and
//! removed as here, and announced so the other replicas read them again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::config::ConfigHash;
use crate::connection::Generation;
use crate::shared::{Changed, PREFIX, SharedStore};

/// How long a server stays `needs-auth` without being asked again.
pub(crate) const NEEDS_AUTH_TTL: Duration = Duration::from_secs(15 * 60);
/// How long a write waits for another process's: short, since the caller may be on an async
/// thread and the file only saves time (a write given up on costs a probe later).
const LOCK_WAIT: Duration = Duration::from_millis(500);

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    #[serde(default)]
    protocols: BTreeMap<String, Remembered>,
    #[serde(default, rename = "needsAuth")]
    needs_auth: BTreeMap<String, NeedsAuth>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Remembered {
    hash: String,
    generation: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct NeedsAuth {
    /// The entry's hash when it needed authorization; a record from before hashes were kept
    /// (empty) matches no entry.
    #[serde(default)]
    hash: String,
    /// Seconds since the epoch until which the server is not tried.
    until: u64,
    message: String,
}

/// The remembered facts, kept in memory and written through to `servers.json`.
#[derive(Debug)]
pub(crate) struct Memory {
    path: Option<PathBuf>,
    file: parking_lot::Mutex<File>,
    shared: Option<SharedStore>,
}

/// Where a needs-auth record is keyed: the entry's hash, and a fingerprint of the credential
/// it sent, as resolved now (issue 41, bug 3): a `${VAR}` in a header or a proxy's `tokenEnv`
/// that the user fixed changes the key, so the fixed value is tried at once rather than after
/// the record's 15 minutes. Only a SHA-256 of the values is kept, never the values.
///
/// A proxy's `tokenCommand` prints its token at connect time, so it cannot be known here:
/// its fingerprint is this process's (a new command-line run tries again; a long-running host
/// waits for a reconnect), or none among replicas, which must agree on the key.
pub(crate) fn credential_key(
    config: &crate::config::ServerConfig,
    env: &crate::config::Environment,
    among_replicas: bool,
) -> ConfigHash {
    use crate::config::{TokenSource, Transport};
    use sha2::{Digest, Sha256};
    let mut sent = Sha256::new();
    let mut any = false;
    let mut add = |part: &str| {
        any = true;
        sent.update(part.as_bytes());
        sent.update([0]);
    };
    match &config.transport {
        Transport::Http(remote) | Transport::Sse(remote) | Transport::WebSocket(remote) => {
            for (name, value) in &remote.headers {
                add(name);
                add(value);
            }
        }
        Transport::Proxy(proxy) => {
            for (name, value) in &proxy.headers {
                add(name);
                add(value);
            }
            match &proxy.token {
                TokenSource::Env(var) => add(env.get(var).unwrap_or_default()),
                TokenSource::Command(_) if !among_replicas => {
                    add(&format!("process {}", std::process::id()));
                }
                TokenSource::Command(_) | TokenSource::Provider => {}
            }
        }
        _ => {}
    }
    if !any {
        return config.hash.clone();
    }
    sent.update(config.hash.0.as_bytes());
    ConfigHash(hex::encode(sent.finalize()))
}

fn needs_auth_key(name: &str) -> String {
    format!("{PREFIX}needs-auth:{name}")
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

impl Memory {
    /// Reads the file in `state_dir`; without one, memory lasts for this process only. A
    /// broken file is ignored (it only saves time).
    pub(crate) fn load(state_dir: Option<&Path>) -> Memory {
        let path = state_dir.map(|d| d.join("servers.json"));
        let file = path
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        Memory {
            path,
            file: parking_lot::Mutex::new(file),
            shared: None,
        }
    }

    /// [`load`](Self::load), then every named server's needs-auth record from the shared
    /// store (one round trip), which replaces this machine's.
    pub(crate) fn load_shared<'a>(
        state_dir: Option<&Path>,
        shared: Option<SharedStore>,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Memory {
        let mut memory = Memory::load(state_dir);
        if let Some(store) = &shared {
            let names: Vec<&str> = names.into_iter().collect();
            let keys: Vec<String> = names.iter().map(|n| needs_auth_key(n)).collect();
            match store.get_many_blocking(&keys) {
                Ok(texts) => {
                    let mut file = memory.file.lock();
                    for (name, text) in names.iter().zip(texts) {
                        match text.and_then(|t| serde_json::from_str(&t).ok()) {
                            Some(record) => file.needs_auth.insert((*name).to_owned(), record),
                            None => file.needs_auth.remove(*name),
                        };
                    }
                }
                Err(e) => tracing::warn!("cannot read the needs-auth records: {e}"),
            }
        }
        memory.shared = shared;
        memory
    }

    /// Reads `name`'s needs-auth record from the shared store again (another replica
    /// changed it).
    pub(crate) async fn reread_needs_auth(&self, name: &str) {
        let Some(store) = &self.shared else { return };
        let record = match store.get(&needs_auth_key(name)).await {
            Ok(text) => text.and_then(|t| serde_json::from_str::<NeedsAuth>(&t).ok()),
            Err(e) => {
                tracing::debug!(server = name, "cannot read the needs-auth record: {e}");
                return;
            }
        };
        let mut file = self.file.lock();
        match record {
            Some(record) => file.needs_auth.insert(name.to_owned(), record),
            None => file.needs_auth.remove(name),
        };
    }

    pub(crate) fn generation(&self, name: &str, hash: &ConfigHash) -> Option<Generation> {
        let file = self.file.lock();
        let r = file.protocols.get(name).filter(|r| r.hash == hash.0)?;
        match r.generation.as_str() {
            "initialize" => Some(Generation::Initialize),
            "discover" => Some(Generation::Discover),
            _ => None,
        }
    }

    pub(crate) fn set_generation(&self, name: &str, hash: &ConfigHash, generation: Generation) {
        let generation = match generation {
            Generation::Initialize => "initialize",
            Generation::Discover => "discover",
        };
        self.update(|file| {
            let new = Remembered {
                hash: hash.0.clone(),
                generation: generation.to_owned(),
            };
            let changed = file
                .protocols
                .get(name)
                .is_none_or(|old| old.hash != new.hash || old.generation != new.generation);
            file.protocols.insert(name.to_owned(), new);
            changed
        });
    }

    /// The message of a still-valid needs-auth record of this very entry.
    pub(crate) fn needs_auth(&self, name: &str, hash: &ConfigHash) -> Option<String> {
        let file = self.file.lock();
        file.needs_auth
            .get(name)
            .filter(|n| n.hash == hash.0 && n.until > now())
            .map(|n| n.message.clone())
    }

    pub(crate) fn set_needs_auth(&self, name: &str, hash: &ConfigHash, message: &str) {
        let record = NeedsAuth {
            hash: hash.0.clone(),
            until: now() + NEEDS_AUTH_TTL.as_secs(),
            message: message.to_owned(),
        };
        if let Some(store) = &self.shared
            && let Ok(text) = serde_json::to_string(&record)
        {
            store.write_later(needs_auth_key(name), Some(text), Some(NEEDS_AUTH_TTL));
            store.announce(name, &hash.0, Changed::NeedsAuth);
        }
        self.update(|file| {
            file.needs_auth.insert(name.to_owned(), record.clone());
            true
        });
    }

    /// Forgets the record of `name`, whatever entry it was for (after a login).
    pub(crate) fn clear_needs_auth(&self, name: &str) {
        let mut had = false;
        self.update(|file| {
            let removed = file.needs_auth.remove(name).is_some();
            had |= removed;
            removed
        });
        if had && let Some(store) = &self.shared {
            store.write_later(needs_auth_key(name), None, None);
            store.announce(name, "", Changed::NeedsAuth);
        }
    }

    /// Forgets `name`'s needs-auth record in `store` and tells the replicas (a login made
    /// outside them, `mcp login --store`); waits until both are sent.
    pub(crate) async fn clear_shared_needs_auth(store: &SharedStore, name: &str) {
        store.write_later(needs_auth_key(name), None, None);
        store.announce(name, "", Changed::NeedsAuth);
        store.flush().await;
    }

    /// Applies `change` here and, when it changed something, to the file as it is on disk
    /// under the file's lock.
    fn update(&self, mut change: impl FnMut(&mut File) -> bool) {
        let mut file = self.file.lock();
        if !change(&mut file) {
            return;
        }
        drop(file);
        let Some(path) = &self.path else { return };
        let _lock = match crate::config::FileLock::acquire_within(path, LOCK_WAIT) {
            Ok(lock) => lock,
            Err(e) => {
                tracing::debug!("cannot write the server memory: {e}");
                return;
            }
        };
        let mut on_disk: File = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        change(&mut on_disk);
        let text = serde_json::to_string_pretty(&on_disk).unwrap_or_default();
        if let Err(e) = crate::config::write_private(path, text.as_bytes()) {
            tracing::debug!(path = %path.display(), "cannot write the server memory: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_processes_keep_each_others_records() {
        let dir = tempfile::tempdir().unwrap();
        let hash = ConfigHash("h".to_owned());
        // Both read the file before either writes, as two processes starting together do.
        let first = Memory::load(Some(dir.path()));
        let second = Memory::load(Some(dir.path()));
        first.set_generation("a", &hash, Generation::Discover);
        second.set_generation("b", &hash, Generation::Initialize);
        second.set_needs_auth("c", &hash, "log in");
        first.clear_needs_auth("c");
        let later = Memory::load(Some(dir.path()));
        assert_eq!(later.generation("a", &hash), Some(Generation::Discover));
        assert_eq!(later.generation("b", &hash), Some(Generation::Initialize));
        // `first` never saw `c`, so its clear changed nothing here and wrote nothing.
        assert_eq!(later.needs_auth("c", &hash).as_deref(), Some("log in"));
    }
}
