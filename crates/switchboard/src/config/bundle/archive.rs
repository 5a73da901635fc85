//! The archive: an MCPB file is a zip, possibly followed by a signature block (`mcpb sign`:
//! `MCPB_SIG_V1`, a 4-byte little-endian length, a PKCS#7 DER signature, `MCPB_SIG_END`).
//! Unpacking refuses any entry that would land outside the bundle's folder: absolute paths,
//! `..`, and symbolic links pointing out (links are made last, so nothing is written through
//! one).

use std::io::{Cursor, Read};
use std::path::{Component, Path, PathBuf};

use super::signature::Verdict;

/// Where the signature block starts and ends.
const SIG_HEADER: &[u8] = b"MCPB_SIG_V1";
const SIG_FOOTER: &[u8] = b"MCPB_SIG_END";

/// The most a bundle may unpack to, and the most entries it may hold (zip bombs).
const MAX_UNPACKED: u64 = 2 << 30;
const MAX_ENTRIES: usize = 100_000;
/// The most `manifest.json` may hold.
const MAX_MANIFEST: u64 = 1 << 20;

/// The archive's bytes, its signature block cut off and checked.
pub(crate) struct Archive {
    zip: zip::ZipArchive<Cursor<Vec<u8>>>,
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

/// Cuts a trailing signature block off (`MCPB_SIG_V1`, a 4-byte little-endian length, the
/// PKCS#7 DER, `MCPB_SIG_END`): the bytes before it, and the signature.
fn split_signature(mut bytes: Vec<u8>) -> (Vec<u8>, Option<Vec<u8>>) {
    if !bytes.ends_with(SIG_FOOTER) {
        return (bytes, None);
    }
    let body_end = bytes.len() - SIG_FOOTER.len();
    let Some(start) = bytes[..body_end]
        .windows(SIG_HEADER.len())
        .rposition(|w| w == SIG_HEADER)
    else {
        return (bytes, None);
    };
    let block = &bytes[start + SIG_HEADER.len()..body_end];
    let signature = match block.split_first_chunk::<4>() {
        Some((len, rest)) => {
            let len = usize::try_from(u32::from_le_bytes(*len)).unwrap_or(usize::MAX);
            rest.get(..len).unwrap_or(rest).to_vec()
        }
        None => Vec::new(),
    };
    bytes.truncate(start);
    (bytes, Some(signature))
}

impl Archive {
    pub(crate) fn open(bytes: Vec<u8>) -> Result<Archive, String> {
        let whole = bytes.ends_with(SIG_FOOTER).then(|| bytes.clone());
        let (bytes, signature) = split_signature(bytes);
        let signature = signature.map(|sig| super::signature::verify(&bytes, &sig));
        // A signer may have counted the block as the zip's comment: then the zip reads whole.
        let zip = match (zip::ZipArchive::new(Cursor::new(bytes)), whole) {
            (Ok(zip), _) => zip,
            (Err(_), Some(whole)) if signature.is_some() => {
                zip::ZipArchive::new(Cursor::new(whole))
                    .map_err(|e| format!("not a zip archive: {e}"))?
            }
            (Err(e), _) => return Err(format!("not a zip archive: {e}")),
        };
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
        let mut text = String::new();
        file.take(MAX_MANIFEST)
            .read_to_string(&mut text)
            .map_err(|e| format!("manifest.json: cannot be read: {e}"))?;
        Ok(text)
    }

    /// Unpacks every entry into `dir` (an empty folder).
    pub(crate) fn unpack(&mut self, dir: &Path) -> Result<(), String> {
        use std::os::unix::fs::PermissionsExt;
        let mut links = Vec::new();
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
                let mut to = String::new();
                file.by_ref()
                    .take(4096)
                    .read_to_string(&mut to)
                    .map_err(|e| format!("entry `{name}`: cannot be read: {e}"))?;
                let from_parent = relative.parent().unwrap_or(Path::new(""));
                if Path::new(&to).is_absolute() || inside_path(&from_parent.join(&to)).is_none() {
                    return Err(format!(
                        "entry `{name}` is a link to `{to}`, outside the bundle's folder"
                    ));
                }
                links.push((target, to, name));
                continue;
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
        for (target, to, name) in links {
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("entry `{name}`: cannot create its folder: {e}"))?;
            }
            std::os::unix::fs::symlink(&to, &target)
                .map_err(|e| format!("entry `{name}`: cannot create the link: {e}"))?;
        }
        Ok(())
    }
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

    #[test]
    fn a_signature_block_is_cut_off() {
        let mut bytes = b"PK-zip-bytes".to_vec();
        let (plain, signature) = split_signature(bytes.clone());
        assert_eq!(signature, None);
        assert_eq!(plain, bytes);
        bytes.extend_from_slice(SIG_HEADER);
        bytes.extend_from_slice(&3u32.to_le_bytes());
        bytes.extend_from_slice(b"sig");
        bytes.extend_from_slice(SIG_FOOTER);
        let (plain, signature) = split_signature(bytes);
        assert_eq!(signature.as_deref(), Some(&b"sig"[..]));
        assert_eq!(plain, b"PK-zip-bytes");
    }
}
