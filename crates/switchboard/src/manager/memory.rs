//! What the manager remembers across runs, in the state directory: which protocol generation
//! answered each server (so the probe runs once), and which servers need authorization (for
//! 15 minutes, so a restart does not prompt again). Both are bound to the entry's hash: an
//! edited entry (a fixed header, a new URL) starts fresh.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::config::ConfigHash;
use crate::connection::Generation;

/// How long a server stays `needs-auth` without being asked again.
pub(crate) const NEEDS_AUTH_TTL: Duration = Duration::from_secs(15 * 60);

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
    file: std::sync::Mutex<File>,
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
            file: std::sync::Mutex::new(file),
        }
    }

    pub(crate) fn generation(&self, name: &str, hash: &ConfigHash) -> Option<Generation> {
        let file = self.file.lock().ok()?;
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
        let file = self.file.lock().ok()?;
        file.needs_auth
            .get(name)
            .filter(|n| n.hash == hash.0 && n.until > now())
            .map(|n| n.message.clone())
    }

    pub(crate) fn set_needs_auth(&self, name: &str, hash: &ConfigHash, message: &str) {
        self.update(|file| {
            let until = now() + NEEDS_AUTH_TTL.as_secs();
            file.needs_auth.insert(
                name.to_owned(),
                NeedsAuth {
                    hash: hash.0.clone(),
                    until,
                    message: message.to_owned(),
                },
            );
            true
        });
    }

    /// Forgets the record of `name`, whatever entry it was for (after a login).
    pub(crate) fn clear_needs_auth(&self, name: &str) {
        self.update(|file| file.needs_auth.remove(name).is_some());
    }

    fn update(&self, change: impl FnOnce(&mut File) -> bool) {
        let Ok(mut file) = self.file.lock() else {
            return;
        };
        if !change(&mut file) {
            return;
        }
        let Some(path) = &self.path else { return };
        let text = serde_json::to_string_pretty(&*file).unwrap_or_default();
        drop(file);
        if let Err(e) = crate::config::write_private(path, text.as_bytes()) {
            tracing::debug!(path = %path.display(), "cannot write the server memory: {e}");
        }
    }
}
