//! Files in the output folder: names built only from sanitised parts, created with `create_new`
//! (never overwriting), owner-only permissions.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Longest a sanitised name part may be, in characters.
const PART_MAX: usize = 64;

/// How many names to try before giving up (each collision moves the counter on).
const ATTEMPTS: u32 = 100;

static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// A name part a server chose, reduced to `[A-Za-z0-9_-]` (anything else becomes `_`), cut to
/// 64 characters; never empty. No dot or slash survives, so the part cannot name another folder.
pub(crate) fn sanitise(part: &str) -> String {
    let s: String = part
        .chars()
        .take(PART_MAX)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() { "_".to_owned() } else { s }
}

/// The last non-empty segment of a URI's path (`file:///a/b/report.pdf` → `report.pdf`), for
/// naming a file after a resource; sanitised by [`sanitise`] later like any other part.
pub(crate) fn uri_stem(uri: &str) -> &str {
    let no_query = uri.split(['?', '#']).next().unwrap_or(uri);
    no_query
        .rsplit('/')
        .find(|s| !s.is_empty())
        .unwrap_or("resource")
}

/// The output folder of one call: creates it (owner-only) on first use.
#[derive(Debug)]
pub(crate) struct Folder<'a> {
    dir: &'a Path,
    /// As the server's entry names it: sanitised when a file is made (most calls make none).
    server: &'a str,
}

impl<'a> Folder<'a> {
    pub(crate) fn new(dir: &'a Path, server: &'a str) -> Folder<'a> {
        Folder { dir, server }
    }

    /// Writes a new file `<server>__<name>__<unique>.<ext>` with `write` and returns its path
    /// and size. `ext` must come from Switchboard, never from a server.
    pub(crate) fn write(
        &self,
        name: &str,
        ext: &str,
        write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<(PathBuf, u64)> {
        let (path, file) = self.create(name, ext)?;
        let mut out = Counter {
            inner: BufWriter::new(file),
            written: 0,
        };
        let result = write(&mut out).and_then(|()| out.flush());
        if let Err(e) = result {
            drop(out);
            // Best effort: a half-written file helps nobody.
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
        Ok((path, out.written))
    }

    fn create(&self, name: &str, ext: &str) -> io::Result<(PathBuf, File)> {
        create_dir(self.dir)?;
        let server = sanitise(self.server);
        let name = sanitise(name);
        let ext = sanitise(ext);
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        let mut last = io::Error::other("no name tried");
        for _ in 0..ATTEMPTS {
            let seq = SEQUENCE.fetch_add(1, Ordering::Relaxed);
            let file_name = format!(
                "{}__{}__{}-{}-{}.{}",
                server,
                name,
                millis,
                std::process::id(),
                seq,
                ext
            );
            let path = self.dir.join(&file_name);
            // Sanitised parts cannot contain a separator; check anyway.
            if path.parent() != Some(self.dir) || path.file_name() != Some(file_name.as_ref()) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "file name escapes the output folder",
                ));
            }
            match open_new(&path) {
                Ok(file) => return Ok((path, file)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }
}

/// Removes the files under `root`'s per-process folders (`<root>/<pid>/…`) last changed more
/// than `max_age` ago, and the folders that leaves empty; `keep` (this process's folder) is
/// left alone. Best effort: what cannot be read or removed stays. Links are never followed.
/// Returns how many files were removed.
pub(crate) fn remove_old(root: &Path, max_age: Duration, keep: &Path) -> usize {
    let Some(cutoff) = SystemTime::now().checked_sub(max_age) else {
        return 0;
    };
    let is_old = |meta: &std::fs::Metadata| meta.modified().is_ok_and(|t| t < cutoff);
    let Ok(folders) = std::fs::read_dir(root) else {
        return 0;
    };
    let mut removed = 0;
    for folder in folders.flatten() {
        let folder = folder.path();
        let Ok(meta) = std::fs::symlink_metadata(&folder) else {
            continue;
        };
        if folder == keep || !meta.is_dir() {
            continue;
        }
        let Ok(files) = std::fs::read_dir(&folder) else {
            continue;
        };
        for file in files.flatten() {
            let path = file.path();
            let old = std::fs::symlink_metadata(&path).is_ok_and(|m| !m.is_dir() && is_old(&m));
            if old && std::fs::remove_file(&path).is_ok() {
                removed += 1;
            }
        }
        // Only an empty folder goes; one that was new when the scan began stays even so (its
        // process may be about to write into it).
        if is_old(&meta) {
            let _ = std::fs::remove_dir(&folder);
        }
    }
    if removed > 0 {
        tracing::debug!(root = %root.display(), "removed {removed} old output file(s)");
    }
    removed
}

#[cfg(unix)]
fn create_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_dir(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)
}

/// `create_new` refuses an existing path, a symbolic link included.
fn open_new(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

struct Counter<W> {
    inner: W,
    written: u64,
}

impl<W: Write> Write for Counter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The file extension for a MIME type, from a fixed table (`bin` otherwise).
pub(crate) fn extension(mime: &str) -> &'static str {
    let essence = mime.split(';').next().unwrap_or("").trim();
    match essence.to_ascii_lowercase().as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "image/bmp" => "bmp",
        "image/tiff" => "tiff",
        "image/avif" => "avif",
        "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
        "audio/mpeg" | "audio/mp3" => "mp3",
        "audio/ogg" => "ogg",
        "audio/flac" => "flac",
        "audio/webm" => "webm",
        "audio/aac" => "aac",
        "audio/mp4" => "m4a",
        "application/pdf" => "pdf",
        "application/zip" => "zip",
        "application/gzip" => "gz",
        "application/json" => "json",
        "text/plain" => "txt",
        "text/html" => "html",
        "text/csv" => "csv",
        "text/markdown" => "md",
        _ => "bin",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitise_keeps_only_safe_characters() {
        assert_eq!(sanitise("../../etc/passwd"), "______etc_passwd");
        assert_eq!(sanitise(""), "_");
        assert_eq!(sanitise("a.b/c\\d\0e"), "a_b_c_d_e");
        assert_eq!(sanitise(&"x".repeat(100)).len(), 64);
        assert_eq!(sanitise("ünï"), "_n_");
    }

    #[test]
    fn uri_stem_takes_the_last_segment() {
        assert_eq!(uri_stem("file:///a/b/report.pdf?x=1"), "report.pdf");
        assert_eq!(uri_stem("file:///../../etc/passwd"), "passwd");
        assert_eq!(uri_stem("mem://thing/"), "thing");
        assert_eq!(uri_stem(""), "resource");
    }
}
