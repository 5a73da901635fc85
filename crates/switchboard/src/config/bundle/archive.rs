//! The archive: an MCPB file is a zip, possibly followed by one signature block (`mcpb sign`:
//! `MCPB_SIG_V1`, a 4-byte little-endian length, that many bytes of CMS DER, zero bytes of
//! padding, `MCPB_SIG_END`) and nothing else. The archive read is the bytes before the block,
//! and only those: they are what the signature covers, and no byte of the block (where a
//! second zip could hide) is ever read as part of the zip. The zip's end record may count the
//! block as its comment (`mcpb sign` and `mcpb prepare-for-signing` write it so, for strict zip
//! readers): then its comment length is cut back to the bytes before the block, and the
//! signature may cover either form. Any other layout is refused.
//!
//! Unpacking refuses any entry that would land outside the bundle's folder: absolute paths,
//! `..`, and symbolic links (a bundle has no need of them, and a chain of links each inside
//! the folder can still lead out of it).

use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};

use super::signature::{Content, Verdict};

/// Where the signature block starts and ends.
const SIG_HEADER: &[u8] = b"MCPB_SIG_V1";
const SIG_FOOTER: &[u8] = b"MCPB_SIG_END";
/// The zip's end-of-central-directory record: its signature, and its size before the comment.
const EOCD_MAGIC: &[u8] = b"PK\x05\x06";
const EOCD_SIZE: usize = 22;

/// The most a bundle may unpack to, and the most entries it may hold (zip bombs).
const MAX_UNPACKED: u64 = 2 << 30;
const MAX_ENTRIES: usize = 100_000;
/// The most `manifest.json` may hold.
const MAX_MANIFEST: u64 = 1 << 20;
/// The most a bundle's file may hold. It is read where it is, never into memory whole: its
/// last bytes (the signature block and the zip's end record), then what the zip reader and
/// the signature's digest ask for.
pub(crate) const MAX_FILE: u64 = 512 << 20;
/// The most a signature block may hold (a signature with its chain is a few kilobytes).
const MAX_SIG_BLOCK: usize = 1 << 20;
/// What is read of the file's end: a whole signature block and, before it, the zip's end
/// record with the longest comment it may have.
const MAX_TAIL: usize = MAX_SIG_BLOCK + EOCD_SIZE + u16::MAX as usize;

/// Anything a bundle is read from: its file (a `Cursor` in tests).
pub(crate) trait Source: Read + Seek + Send {}
impl<T: Read + Seek + Send> Source for T {}

/// The archive's bytes, its signature block cut off and checked.
pub(crate) struct Archive {
    zip: zip::ZipArchive<Window>,
    /// What its signature block says (`None`: there is none).
    pub(crate) signature: Option<Verdict>,
}

impl std::fmt::Debug for Archive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Archive")
            .field("entries", &self.zip.len())
            .field("signature", &self.signature)
            .finish()
    }
}

/// The zip's bytes of a bundle's file, read in place: its first `len` bytes (the signature
/// block after them is never part of it), the end record's comment length replaced by
/// `patch` (the zip as it reads alone) when there is one.
struct Window {
    source: Box<dyn Source>,
    len: u64,
    /// Where `source` is, in the window.
    pos: u64,
    /// The offset of the end record's comment length, and the length the zip reads with.
    patch: Option<(u64, [u8; 2])>,
}

impl Read for Window {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.len.saturating_sub(self.pos);
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        if want == 0 {
            return Ok(0);
        }
        let n = self.source.read(&mut buf[..want])?;
        if let Some((at, bytes)) = self.patch {
            for (i, byte) in bytes.iter().enumerate() {
                let offset = at + i as u64;
                if offset >= self.pos && offset < self.pos + n as u64 {
                    buf[(offset - self.pos) as usize] = *byte;
                }
            }
        }
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for Window {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        let pos = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        }
        .ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "a seek before the start")
        })?;
        self.source.seek(SeekFrom::Start(pos))?;
        self.pos = pos;
        Ok(pos)
    }
}

/// The forms of the zip a signature may cover (`patches`: each form's end record comment
/// length, `None` as written), read from the file each time a digest needs them.
struct Forms<'a> {
    window: &'a mut Window,
    patches: Vec<Option<(u64, [u8; 2])>>,
}

impl Content for Forms<'_> {
    fn forms(&self) -> usize {
        self.patches.len()
    }

    fn len(&self) -> u64 {
        self.window.len
    }

    fn feed(&mut self, form: usize, sink: &mut dyn FnMut(&[u8])) -> std::io::Result<()> {
        self.window.patch = self.patches.get(form).copied().flatten();
        self.window.seek(SeekFrom::Start(0))?;
        let mut buf = vec![0; 64 << 10];
        loop {
            match self.window.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => sink(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// A file cut at its signature block: the zip before it, and the block's DER.
#[derive(Debug, PartialEq, Eq)]
struct Split<'a> {
    zip: &'a [u8],
    der: &'a [u8],
}

/// Finds the one signature block at the end of `bytes` (the file's last bytes): `Ok(None)`
/// when the file does not end with `MCPB_SIG_END`; an error when it does but the block is not
/// laid out exactly so.
fn split_signature(bytes: &[u8]) -> Result<Option<Split<'_>>, String> {
    let Some(body_end) = bytes.len().checked_sub(SIG_FOOTER.len()) else {
        return Ok(None);
    };
    if &bytes[body_end..] != SIG_FOOTER {
        // A block with more bytes after it: something was appended to a signed file.
        if let Some(footer) = memchr::memmem::rfind(bytes, SIG_FOOTER)
            && memchr::memmem::rfind(&bytes[..footer], SIG_HEADER).is_some()
        {
            return Err(format!(
                "{} bytes follow its signature block; a bundle ends with its signature",
                bytes.len() - footer - SIG_FOOTER.len()
            ));
        }
        return Ok(None);
    }
    // The block's framing is exact: the length reaches the padding, and the padding is zeros
    // up to the footer. Tried from the last header back (the DER may hold the header's bytes).
    let mut search = &bytes[..body_end];
    while let Some(start) = search
        .windows(SIG_HEADER.len())
        .rposition(|w| w == SIG_HEADER)
    {
        search = &bytes[..start];
        let after = start + SIG_HEADER.len();
        let Some(len) = bytes.get(after..after + 4) else {
            continue;
        };
        let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
        let der_start = after + 4;
        let Some(der_end) = der_start.checked_add(len).filter(|end| *end <= body_end) else {
            continue;
        };
        if bytes[der_end..body_end].iter().all(|b| *b == 0) {
            return Ok(Some(Split {
                zip: &bytes[..start],
                der: &bytes[der_start..der_end],
            }));
        }
    }
    Err(format!(
        "its signature block is malformed: `MCPB_SIG_END` ends the file, but no \
         `MCPB_SIG_V1` block before it holds exactly its length of signature and zero \
         padding within the last {} MiB, the most a signature block may be",
        MAX_SIG_BLOCK >> 20
    ))
}

/// Where `zip`'s end record is, when its comment ends where `zip` ends (`total == zip.len()`)
/// or where the whole file ends (`total`: the comment counts the signature block).
fn end_record(zip: &[u8], total: usize) -> Option<(usize, usize)> {
    let last = zip.len().checked_sub(EOCD_SIZE)?;
    (0..=last).rev().take(u16::MAX as usize + 1).find_map(|at| {
        if &zip[at..at + 4] != EOCD_MAGIC {
            return None;
        }
        let comment = usize::from(u16::from_le_bytes([zip[at + 20], zip[at + 21]]));
        let ends = at + EOCD_SIZE + comment;
        (ends == zip.len() || ends == total).then_some((at, comment))
    })
}

impl Archive {
    /// Opens the bundle in `source` (at most [`MAX_FILE`] bytes, checked before anything is
    /// read), reading only its end into memory.
    pub(crate) fn open(source: impl Source + 'static) -> Result<Archive, String> {
        let mut source: Box<dyn Source> = Box::new(source);
        let cannot = |e: std::io::Error| format!("cannot be read: {e}");
        let total = source.seek(SeekFrom::End(0)).map_err(cannot)?;
        if total > MAX_FILE {
            return Err(too_large());
        }
        // The file's end: where a signature block and the zip's end record are.
        let tail_len = total.min(MAX_TAIL as u64);
        let base = total - tail_len;
        let mut tail = vec![0; tail_len as usize];
        source.seek(SeekFrom::Start(base)).map_err(cannot)?;
        source.read_exact(&mut tail).map_err(cannot)?;
        let mut window = Window {
            source,
            len: total,
            pos: total,
            patch: None,
        };
        let signature = match split_signature(&tail)? {
            None => None,
            Some(split) => {
                let (at, comment) = end_record(split.zip, tail.len()).ok_or(
                    "its zip does not end where its signature block starts (its end record \
                     is not there, or its comment runs past the block)",
                )?;
                // The zip as it reads alone: its comment is what lies before the block.
                let own = u16::try_from(split.zip.len() - at - EOCD_SIZE)
                    .map_err(|_| "its zip comment is too long".to_owned())?;
                let alone = Some((base + (at + 20) as u64, own.to_le_bytes()));
                window.len = base + split.zip.len() as u64;
                let patches = if comment + at + EOCD_SIZE == split.zip.len() {
                    vec![None]
                } else {
                    vec![alone, None]
                };
                let der = split.der.to_vec();
                drop(tail);
                let verdict = super::signature::verify(
                    &mut Forms {
                        window: &mut window,
                        patches,
                    },
                    &der,
                );
                window.patch = alone;
                Some(verdict)
            }
        };
        window.seek(SeekFrom::Start(0)).map_err(cannot)?;
        let zip = zip::ZipArchive::new(window).map_err(|e| format!("not a zip archive: {e}"))?;
        if zip.len() > MAX_ENTRIES {
            return Err(format!("more than {MAX_ENTRIES} entries"));
        }
        Ok(Archive { zip, signature })
    }

    /// `manifest.json`'s text.
    pub(crate) fn manifest(&mut self) -> Result<String, String> {
        let file = self
            .zip
            .by_name("manifest.json")
            .map_err(|_| "no manifest.json at its root".to_owned())?;
        if file.size() > MAX_MANIFEST {
            return Err(manifest_too_large());
        }
        let mut text = String::new();
        file.take(MAX_MANIFEST + 1)
            .read_to_string(&mut text)
            .map_err(|e| format!("manifest.json: cannot be read: {e}"))?;
        if text.len() as u64 > MAX_MANIFEST {
            return Err(manifest_too_large());
        }
        Ok(text)
    }

    /// Unpacks every entry into `dir` (an empty folder).
    pub(crate) fn unpack(&mut self, dir: &Path) -> Result<(), String> {
        use std::os::unix::fs::PermissionsExt;
        let mut total = 0u64;
        for i in 0..self.zip.len() {
            let mut file = self
                .zip
                .by_index(i)
                .map_err(|e| format!("entry {i}: cannot be read: {e}"))?;
            let name = file
                .name()
                .map_err(|e| format!("entry {i}: its name cannot be read: {e}"))?
                .into_owned();
            let relative = inside(&name)
                .ok_or_else(|| format!("entry `{name}` would land outside the bundle's folder"))?;
            if relative.as_os_str().is_empty() {
                continue;
            }
            let target = dir.join(&relative);
            if file.is_dir() {
                std::fs::create_dir_all(&target)
                    .map_err(|e| format!("entry `{name}`: cannot create its folder: {e}"))?;
                continue;
            }
            if file.is_symlink() {
                // Refused whatever it points at: a chain of links, each inside the folder as
                // written, can still lead out of it once the earlier ones are on disk.
                let mut to = String::new();
                let _ = file.by_ref().take(4096).read_to_string(&mut to);
                return Err(format!(
                    "entry `{name}` is a symbolic link (to `{}`); a bundle may not hold links",
                    to.escape_debug()
                ));
            }
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("entry `{name}`: cannot create its folder: {e}"))?;
            }
            let mut out = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&target)
                .map_err(|e| format!("entry `{name}`: cannot be written: {e}"))?;
            let left = MAX_UNPACKED.saturating_sub(total);
            let copied = std::io::copy(&mut file.by_ref().take(left + 1), &mut out)
                .map_err(|e| format!("entry `{name}`: cannot be unpacked: {e}"))?;
            total += copied;
            if total > MAX_UNPACKED {
                return Err(format!(
                    "it unpacks to more than {} MiB",
                    MAX_UNPACKED >> 20
                ));
            }
            // Keep the owner's execute bit (a binary server); nothing set-id, nothing shared
            // for writing.
            let mode = file
                .unix_mode()
                .map_or(0o644, |m| if m & 0o100 != 0 { 0o755 } else { 0o644 });
            out.set_permissions(std::fs::Permissions::from_mode(mode))
                .map_err(|e| format!("entry `{name}`: {e}"))?;
        }
        Ok(())
    }
}

/// The refusal of a file larger than a bundle may be.
pub(crate) fn too_large() -> String {
    format!(
        "it is larger than {} MiB, the most a bundle may be",
        MAX_FILE >> 20
    )
}

fn manifest_too_large() -> String {
    format!(
        "manifest.json is larger than {} KiB, the most a bundle's manifest may be",
        MAX_MANIFEST >> 10
    )
}

/// The entry's path inside the bundle's folder, `None` when it would land outside it
/// (absolute, a drive, `..` above the root). Backslashes count as separators.
fn inside(name: &str) -> Option<PathBuf> {
    // A NUL, or a drive (`C:`).
    if name.contains('\0') || name.as_bytes().get(1) == Some(&b':') {
        return None;
    }
    let name = name.replace('\\', "/");
    if name.starts_with('/') {
        return None;
    }
    inside_path(Path::new(&name))
}

/// `path` with `.` and `..` resolved, `None` when it climbs above its start or is absolute.
fn inside_path(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn entries_outside_the_folder_are_found() {
        assert_eq!(inside("a/b.js"), Some(PathBuf::from("a/b.js")));
        assert_eq!(inside("a/../b.js"), Some(PathBuf::from("b.js")));
        assert_eq!(inside("../evil"), None);
        assert_eq!(inside("a/../../evil"), None);
        assert_eq!(inside("/etc/passwd"), None);
        assert_eq!(inside("..\\evil"), None);
        assert_eq!(inside("C:/evil"), None);
    }

    fn block(der: &[u8], padding: usize) -> Vec<u8> {
        let mut out = SIG_HEADER.to_vec();
        out.extend_from_slice(&u32::try_from(der.len()).unwrap().to_le_bytes());
        out.extend_from_slice(der);
        out.extend(std::iter::repeat_n(0, padding));
        out.extend_from_slice(SIG_FOOTER);
        out
    }

    #[test]
    fn a_signature_block_is_cut_off_exactly() {
        let zip = b"PK-zip-bytes".to_vec();
        assert_eq!(split_signature(&zip), Ok(None));
        let mut bytes = zip.clone();
        bytes.extend(block(b"sig", 0));
        let split = split_signature(&bytes).unwrap().unwrap();
        assert_eq!((split.zip, split.der), (&b"PK-zip-bytes"[..], &b"sig"[..]));
        // Zero padding (`mcpb apply-signature` pads the block to a fixed size) is allowed.
        let mut padded = zip.clone();
        padded.extend(block(b"sig", 40));
        let split = split_signature(&padded).unwrap().unwrap();
        assert_eq!((split.zip, split.der), (&b"PK-zip-bytes"[..], &b"sig"[..]));
    }

    #[test]
    fn anything_between_the_signature_and_its_footer_is_refused() {
        // A second archive between the DER and the footer: the wrapping attack.
        let mut bytes = b"PK-zip-bytes".to_vec();
        let mut wrapped = block(b"sig", 0);
        let footer = wrapped.split_off(wrapped.len() - SIG_FOOTER.len());
        wrapped.extend_from_slice(b"PK\x03\x04 a second zip PK\x05\x06");
        wrapped.extend(footer);
        bytes.extend(wrapped);
        let err = split_signature(&bytes).unwrap_err();
        assert!(err.contains("signature block is malformed"), "{err}");
        // A length that runs past the footer, or a block with no header at all.
        let mut bytes = b"PK".to_vec();
        bytes.extend_from_slice(SIG_HEADER);
        bytes.extend_from_slice(&999u32.to_le_bytes());
        bytes.extend_from_slice(b"sig");
        bytes.extend_from_slice(SIG_FOOTER);
        assert!(split_signature(&bytes).is_err());
        assert!(split_signature(SIG_FOOTER).is_err());
    }

    #[test]
    fn the_end_record_must_end_at_the_block_or_count_it_as_its_comment() {
        let mut zip = b"entries".to_vec();
        zip.extend_from_slice(EOCD_MAGIC);
        zip.extend_from_slice(&[0; 16]);
        zip.extend_from_slice(&0u16.to_le_bytes());
        assert_eq!(end_record(&zip, zip.len() + 50), Some((7, 0)));
        // The comment counts the 50 bytes of the block.
        let n = zip.len();
        zip[n - 2..].copy_from_slice(&50u16.to_le_bytes());
        assert_eq!(end_record(&zip, zip.len() + 50), Some((7, 50)));
        // A comment that ends anywhere else (in the middle of the block, past it).
        zip[n - 2..].copy_from_slice(&20u16.to_le_bytes());
        assert_eq!(end_record(&zip, zip.len() + 50), None);
    }

    /// A small real bundle: a manifest and a script, deflated.
    fn small_zip() -> Vec<u8> {
        use std::io::Write as _;
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        zip.start_file("manifest.json", options).unwrap();
        zip.write_all(br#"{"name": "fuzz", "version": "1.0.0"}"#)
            .unwrap();
        zip.start_file("server/run.sh", options).unwrap();
        zip.write_all(b"#!/bin/sh\necho hello\n").unwrap();
        zip.finish().unwrap().into_inner()
    }

    proptest::proptest! {
        // The bundle reader as a fuzz target: a real bundle with bytes changed anywhere, and
        // maybe a signature block of random bytes after it, opens or is refused, and what
        // opens unpacks or is refused, never panicking and never writing outside its folder.
        #[test]
        fn a_changed_bundle_opens_and_unpacks_inside_its_folder_or_is_refused(
            changes in proptest::collection::vec((proptest::prelude::any::<usize>(), proptest::prelude::any::<u8>()), 0..8),
            signature in proptest::option::of(proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)),
        ) {
            let mut bytes = small_zip();
            let len = bytes.len();
            for (at, byte) in changes {
                bytes[at % len] = byte;
            }
            if let Some(der) = signature {
                bytes.extend(block(&der, 0));
            }
            let dir = tempfile::tempdir().unwrap();
            let inner = dir.path().join("bundle");
            std::fs::create_dir(&inner).unwrap();
            if let Ok(mut archive) = Archive::open(std::io::Cursor::new(bytes)) {
                let _ = archive.manifest();
                let _ = archive.unpack(&inner);
            }
            let outside: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
            proptest::prop_assert_eq!(outside, vec![std::ffi::OsString::from("bundle")]);
        }

        // Whatever follows a zip, opening it never panics, and a file that does not end in a
        // well-formed block reads as it is.
        #[test]
        fn any_tail_opens_or_is_refused(tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let mut bytes = b"PK\x05\x06".to_vec();
            bytes.extend_from_slice(&[0; 18]);
            bytes.extend_from_slice(&tail);
            bytes.extend_from_slice(SIG_FOOTER);
            let _ = Archive::open(std::io::Cursor::new(bytes));
        }
    }
}
