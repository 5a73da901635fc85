//! Sessions their clients ended (`DELETE`), among replicas without a shared store
//! (`--cluster-key-file` without `--store`): a sealed session id would open again on the replica
//! that ended it (rmcp restores an id it does not hold), so the replica remembers the ids it
//! ended until they expire ([`SEALED_SESSION_LIFE`]), at most [`ENDED_KEPT`] of them (the
//! oldest forgotten first), and keeps them across a restart in the state folder
//! ([`ENDED_FILE`]: owner-only, written whole and renamed into place, merged with what another
//! replica sharing the folder wrote). Ids are kept as [`SharedStore::session_key`] hashes,
//! never as themselves. Among replicas with a store, [`crate::session_sync`] does this.

use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use switchboard::shared::SharedStore;

use crate::sessions::SEALED_SESSION_LIFE;

/// The file, in the state folder.
pub(crate) const ENDED_FILE: &str = "gateway-ended-sessions";

/// How many ended sessions a replica remembers.
pub(crate) const ENDED_KEPT: usize = 65_536;

/// The largest file read back (a line is a 32-digit key, a space, seconds and a newline).
const MAX_FILE: u64 = (ENDED_KEPT as u64) * 64;

/// The ended sessions' keys with when each may be forgotten (seconds since the epoch).
#[derive(Debug, Default)]
struct Kept {
    until: HashMap<String, u64>,
    order: VecDeque<String>,
}

impl Kept {
    fn insert(&mut self, key: String, until: u64, now: u64) {
        if self.until.insert(key.clone(), until).is_none() {
            self.order.push_back(key);
        }
        while let Some(oldest) = self.order.front() {
            let expired = self.until.get(oldest).is_none_or(|until| *until <= now);
            if !expired && self.order.len() <= ENDED_KEPT {
                break;
            }
            if let Some(oldest) = self.order.pop_front() {
                self.until.remove(&oldest);
            }
        }
    }

    fn text(&self) -> String {
        let mut text = String::new();
        for key in &self.order {
            if let Some(until) = self.until.get(key) {
                text.push_str(&format!("{key} {until}\n"));
            }
        }
        text
    }
}

/// One replica's ended sessions (see the module's doc).
#[derive(Debug)]
pub(crate) struct Ended {
    path: PathBuf,
    kept: Mutex<Kept>,
    /// One write at a time.
    writing: tokio::sync::Mutex<()>,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The entries of the file at `path` not expired by `now`; a missing file has none, one that
/// cannot be read is logged and taken as empty.
fn read(path: &Path, now: u64) -> Vec<(String, u64)> {
    let text = match std::fs::File::open(path) {
        Ok(file) => {
            use std::io::Read as _;
            let mut text = String::new();
            if let Err(e) = file.take(MAX_FILE).read_to_string(&mut text) {
                tracing::warn!("{}: cannot read the ended sessions: {e}", path.display());
            }
            text
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            tracing::warn!("{}: cannot read the ended sessions: {e}", path.display());
            String::new()
        }
    };
    text.lines()
        .filter_map(|line| {
            let (key, until) = line.split_once(' ')?;
            let until = until.trim().parse::<u64>().ok()?;
            let well_formed = key.len() == 32 && key.bytes().all(|b| b.is_ascii_hexdigit());
            (well_formed && until > now).then(|| (key.to_owned(), until))
        })
        .collect()
}

impl Ended {
    /// The ended sessions kept in `state_dir`.
    pub(crate) fn load(state_dir: &Path) -> Arc<Ended> {
        let path = state_dir.join(ENDED_FILE);
        let now = now();
        let mut kept = Kept::default();
        for (key, until) in read(&path, now) {
            kept.insert(key, until, now);
        }
        Arc::new(Ended {
            path,
            kept: Mutex::new(kept),
            writing: tokio::sync::Mutex::new(()),
        })
    }

    /// Whether the client of the session `id` ended it.
    pub(crate) fn contains(&self, id: &str) -> bool {
        let key = SharedStore::session_key(id);
        self.kept
            .lock()
            .until
            .get(&key)
            .is_some_and(|until| *until > now())
    }

    /// The client ended the session `id`: refused from now on, here and after a restart (a
    /// file that cannot be written is logged; the end holds until this replica stops).
    pub(crate) async fn insert(self: &Arc<Self>, id: &str) {
        let key = SharedStore::session_key(id);
        let now = now();
        let until = now + SEALED_SESSION_LIFE.as_secs();
        self.kept.lock().insert(key, until, now);
        let _writing = self.writing.lock().await;
        let ended = self.clone();
        let written = tokio::task::spawn_blocking(move || ended.write(now)).await;
        match written {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(
                "{}: cannot keep the ended sessions: {e}; a restart forgets them",
                self.path.display()
            ),
            Err(e) => tracing::warn!("the ended sessions were not written: {e}"),
        }
    }

    /// Writes the file whole (merged with what another replica wrote there), owner-only, and
    /// renames it into place.
    fn write(&self, now: u64) -> std::io::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let text = {
            let mut kept = self.kept.lock();
            for (key, until) in read(&self.path, now) {
                if !kept.until.contains_key(&key) {
                    kept.insert(key, until, now);
                }
            }
            kept.text()
        };
        // `tempfile` makes the file 0600.
        let mut file = tempfile::NamedTempFile::new_in(dir)?;
        file.write_all(text.as_bytes())?;
        file.as_file().sync_all()?;
        file.persist(&self.path).map_err(|e| e.error)?;
        Ok(())
    }
}
