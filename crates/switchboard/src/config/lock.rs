//! Advisory locks for read-modify-write edits of the files Switchboard writes.
//!
//! Every file that is read, changed and written back (a scope's `mcpServers`, `local.json`,
//! `approvals.json`) is edited under an exclusive `File::lock` on a sibling `<file>.lock`, and
//! re-read under it: two processes editing the same file at once both succeed, one after the
//! other, instead of one overwriting the other's change. The wait is bounded; readers need no
//! lock, since every write is an atomic rename.
//!
//! On Unix the lock file is removed when the lock is released (no `.mcp.json.lock` left in a
//! repository); a process that locked a file which was removed meanwhile tries again on the
//! new one, so removing it never lets two holders in.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::ConfigError;
use super::edit::create_private_dir;

/// How long an edit waits for another process to finish its own.
pub(crate) const LOCK_WAIT: Duration = Duration::from_secs(30);
/// How often the lock is tried meanwhile.
const LOCK_POLL: Duration = Duration::from_millis(10);

/// An exclusive lock on a file's `<file>.lock`, held until dropped.
#[derive(Debug)]
pub(crate) struct FileLock {
    path: PathBuf,
    file: Option<File>,
}

impl FileLock {
    /// Locks `target` (through `<target>.lock`), waiting at most [`LOCK_WAIT`].
    pub(crate) fn acquire(target: &Path) -> Result<FileLock, ConfigError> {
        Self::acquire_within(target, LOCK_WAIT)
    }

    pub(crate) fn acquire_within(target: &Path, wait: Duration) -> Result<FileLock, ConfigError> {
        let path = lock_path(target);
        let fail = |source| ConfigError::Lock {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            create_private_dir(dir).map_err(fail)?;
        }
        let deadline = Instant::now() + wait;
        loop {
            let file = OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .map_err(fail)?;
            match file.try_lock() {
                // Locked, and still the file at that path (not one a releasing holder removed).
                Ok(()) if same_file(&file, &path) => {
                    return Ok(FileLock {
                        path,
                        file: Some(file),
                    });
                }
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(source)) => return Err(fail(source)),
            }
            drop(file);
            if Instant::now() >= deadline {
                return Err(ConfigError::LockTimeout {
                    path: target.to_owned(),
                    waited: wait,
                });
            }
            std::thread::sleep(LOCK_POLL);
        }
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // Removed while still held, so a waiter that opened it sees it gone and opens anew.
        #[cfg(unix)]
        let _ = std::fs::remove_file(&self.path);
        drop(self.file.take());
    }
}

/// `<file>.lock` beside `file`.
fn lock_path(file: &Path) -> PathBuf {
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    file.with_file_name(name)
}

/// Whether `path` still names the open `file`.
#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_file: &File, _path: &Path) -> bool {
    // The lock file is never removed there.
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_waits_and_is_told_which_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("mcp.json");
        let held = FileLock::acquire(&target).unwrap();
        assert!(dir.path().join("mcp.json.lock").exists());
        let err = FileLock::acquire_within(&target, Duration::ZERO).unwrap_err();
        let message = err.to_string();
        assert!(message.contains(&target.display().to_string()), "{message}");
        assert!(message.contains("another process"), "{message}");
        drop(held);
        assert!(!dir.path().join("mcp.json.lock").exists());
        FileLock::acquire_within(&target, Duration::ZERO).unwrap();
    }
}
