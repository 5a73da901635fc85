//! Skills (SEP-2640, `io.modelcontextprotocol/skills`): the skills of every connected server
//! that serves them, named per server (`mcp__<server>__<skill>`), and one skill fetched whole:
//! its entry (`skills/get`), then each file of its manifest through `resources/read`, each
//! checked against the manifest's size and digest, and the `SKILL.md`'s frontmatter against
//! the entry's, before any of it is handed out.
//!
//! What the extension leaves to a host, decided here: a skill whose files are `"dynamic"`
//! (no digests) or over the extension's limits (512 files, 16 MiB) is not loaded; a `deny`
//! rule that matches a skill's qualified name hides it, as it hides a tool (a rule for the
//! whole server, `mcp__<server>`, hides its skills too); `enabledTools` and `disabledTools`
//! name tools and do not apply. Nothing in a skill's frontmatter (`allowed-tools`) changes a
//! permission.

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::Value;

use super::requests::{Listing, Offer, bounded};
use super::{Host, HostError};
use crate::connection::skills::{check_entry, verify_file};
use crate::name::QualifiedName;

/// The most files a skill may have (the extension's limit, its `SKILL.md` included).
pub const MAX_SKILL_FILES: usize = 512;
/// The most bytes a skill's files may hold together (the extension's limit: 16 MiB).
pub const MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;

/// What a skill's entry is named by: the `SKILL.md` at the end of its URI.
const SKILL_MD: &str = "SKILL.md";

/// A skill, as its server lists it, with the name the host gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillEntry {
    /// `mcp__<server>__<skill>`; when two of the server's skills share a name, each is named
    /// by its path instead (`mcp__<server>__<path with _ for />`).
    pub name: String,
    /// The server that serves it.
    pub server: String,
    /// The skill's name (its frontmatter's `name`, the last segment of its path).
    pub skill: String,
    /// The URI of its `SKILL.md`.
    pub uri: String,
    /// Its frontmatter's `description`.
    pub description: String,
    /// Its manifest: every file with its digest and size; `None` when the server gives none
    /// (`"dynamic"`).
    pub files: Option<Vec<SkillFileRef>>,
    /// The entry as MCP JSON (`uri`, `frontmatter`, `resources`).
    pub definition: Value,
}

/// A file of a skill's manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFileRef {
    /// Its URI.
    pub uri: String,
    /// `sha256:` and 64 lowercase hex digits.
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
}

/// A skill fetched whole, every file checked against its manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct FetchedSkill {
    /// Its entry, as `skills/get` answered it.
    pub entry: SkillEntry,
    /// Its files, in the manifest's order.
    pub files: Vec<SkillFile>,
}

/// One file of a fetched skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    /// Its URI.
    pub uri: String,
    /// Its path inside the skill's folder (`SKILL.md`, `references/guide.md`): `/`-separated
    /// plain segments (no `.`, `..` or empty one), percent-escapes decoded.
    pub path: String,
    /// Its MIME type, as the read gave it.
    pub mime_type: Option<String>,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

impl SkillEntry {
    /// The skill's path in its server's namespace: its URI without the scheme and without
    /// `/SKILL.md` (`skill://acme/billing/SKILL.md` → `acme/billing`).
    pub fn path(&self) -> &str {
        let rest = self
            .uri
            .split_once("://")
            .map_or(self.uri.as_str(), |(_, rest)| rest);
        rest.strip_suffix(SKILL_MD)
            .map_or(rest, |r| r.trim_end_matches('/'))
    }

    /// The folder its files' URIs start with (`skill://acme/billing/`).
    fn root(&self) -> &str {
        self.uri.strip_suffix(SKILL_MD).unwrap_or(&self.uri)
    }
}

impl FetchedSkill {
    /// The skill's `SKILL.md`.
    pub fn skill_md(&self) -> Option<&SkillFile> {
        self.files.iter().find(|f| f.uri == self.entry.uri)
    }
}

impl Host {
    /// Every skill of the connected servers that serve skills (or of `server` only), each
    /// with its manifest, named `mcp__<server>__<skill>`. Nothing is read: a skill's files
    /// are fetched by [`skill`](Self::skill). An entry that breaks the extension's rules is
    /// left out and named among the failures; one a `deny` rule matches is left out.
    pub async fn skills(&self, server: Option<&str>) -> Listing<SkillEntry> {
        let listing = self
            .gather(server, Offer::Skills, "skills/list", |s, name| async move {
                s.manager
                    .request(&name, |session| async move { session.list_skills().await })
                    .await
                    .map_err(|e| HostError::from_failure(&name, "skills/list", e))
            })
            .await;
        let mut failures = listing.failures;
        let mut by_server: BTreeMap<String, Vec<SkillEntry>> = BTreeMap::new();
        for listed in listing.items {
            match skill_entry(&listed.server, listed.item) {
                Ok(entry) => by_server.entry(listed.server).or_default().push(entry),
                Err(e) => failures.push(e),
            }
        }
        let mut items = Vec::new();
        for (_, mut entries) in by_server {
            name_apart(&mut entries);
            items.extend(entries.into_iter().filter(|e| !self.skill_hidden(e)));
        }
        Listing { items, failures }
    }

    /// One skill of `server`, fetched whole: found by its qualified name, its name, its path
    /// or the URI of its `SKILL.md` (a URI need not be listed: it is asked of the server), its
    /// entry asked afresh (`skills/get`), then each file of its manifest read and checked
    /// against its size and digest, and the `SKILL.md`'s `name` and `description` against the
    /// entry's frontmatter. A file that differs fails the whole fetch
    /// ([`HostError::SkillIntegrity`], naming the server, the skill and the file).
    pub async fn skill(&self, server: &str, name: &str) -> Result<FetchedSkill, HostError> {
        self.connected_to(server).await?;
        let listed = if name.ends_with(SKILL_MD) && name.contains(':') {
            self.skills(Some(server))
                .await
                .items
                .into_iter()
                .find(|listed| listed.uri == name)
        } else {
            Some(self.find_skill(server, name).await?)
        };
        let uri = listed.as_ref().map_or(name, |listed| listed.uri.as_str());
        let timeout = self.limits.tool_timeout;
        let got = self.manager.request(server, |s| {
            let uri = uri.to_owned();
            async move { s.get_skill(&uri).await }
        });
        let definition = bounded(server, "skills/get", timeout, got)
            .await?
            .map_err(|e| HostError::from_failure(server, "skills/get", e))?;
        let mut entry = skill_entry(server, definition)?;
        if let Some(listed) = listed {
            entry.name = listed.name;
        }
        if self.skill_hidden(&entry) {
            return Err(HostError::NoSuchSkill {
                server: server.to_owned(),
                name: name.to_owned(),
            });
        }
        let refused = |reason: String| HostError::SkillRefused {
            server: server.to_owned(),
            skill: entry.skill.clone(),
            reason,
        };
        let Some(manifest) = entry.files.clone() else {
            return Err(refused(
                "its server gives no digests for its files (\"dynamic\"), so they cannot be verified".to_owned(),
            ));
        };
        let total: u64 = manifest.iter().map(|f| f.size).sum();
        if manifest.len() > MAX_SKILL_FILES || total > MAX_SKILL_BYTES {
            return Err(refused(format!(
                "{} files, {total} bytes: over the extension's limits ({MAX_SKILL_FILES} files, {MAX_SKILL_BYTES} bytes)",
                manifest.len()
            )));
        }
        let mut files = Vec::with_capacity(manifest.len());
        for file in &manifest {
            let integrity = |reason: String| HostError::SkillIntegrity {
                server: server.to_owned(),
                skill: entry.skill.clone(),
                file: file.uri.clone(),
                reason,
            };
            let path = relative_path(entry.root(), &file.uri).ok_or_else(|| {
                integrity("its URI is not a plain path inside the skill's folder".to_owned())
            })?;
            let read = self.manager.request(server, |s| {
                let uri = file.uri.clone();
                async move { s.read_resource(&uri, None).await }
            });
            let result = bounded(server, "resources/read", timeout, read)
                .await?
                .map_err(|e| HostError::from_failure(server, "resources/read", e))?;
            let (bytes, mime_type) = contents_bytes(&result, &file.uri).map_err(integrity)?;
            verify_file(&file.uri, &file.digest, file.size, &bytes).map_err(integrity)?;
            if file.uri == entry.uri {
                frontmatter_matches(&bytes, &entry.definition["frontmatter"]).map_err(integrity)?;
            }
            files.push(SkillFile {
                uri: file.uri.clone(),
                path,
                mime_type,
                bytes,
            });
        }
        Ok(FetchedSkill { entry, files })
    }

    /// The listed skill of `server` that `name` names.
    async fn find_skill(&self, server: &str, name: &str) -> Result<SkillEntry, HostError> {
        let mut listing = self.skills(Some(server)).await;
        if let Some(e) = listing.failures.pop() {
            return Err(e);
        }
        if let Some(found) = listing
            .items
            .iter()
            .find(|s| s.name == name || s.path() == name)
        {
            return Ok(found.clone());
        }
        let mut named: Vec<SkillEntry> = listing
            .items
            .into_iter()
            .filter(|s| s.skill == name)
            .collect();
        match named.len() {
            0 => Err(HostError::NoSuchSkill {
                server: server.to_owned(),
                name: name.to_owned(),
            }),
            1 => Ok(named.remove(0)),
            _ => Err(HostError::SkillAmbiguous {
                server: server.to_owned(),
                name: name.to_owned(),
                candidates: named.into_iter().map(|s| s.name).collect(),
            }),
        }
    }

    /// Whether a `deny` rule hides the skill (its qualified name, or its server's).
    fn skill_hidden(&self, entry: &SkillEntry) -> bool {
        self.gate.settings().is_hidden(&entry.name)
    }
}

/// An entry of `server`'s, checked against the extension's rules.
fn skill_entry(server: &str, definition: Value) -> Result<SkillEntry, HostError> {
    let uri = definition["uri"].as_str().unwrap_or_default().to_owned();
    let skill = definition["frontmatter"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    check_entry(&definition).map_err(|reason| HostError::SkillRefused {
        server: server.to_owned(),
        skill: if skill.is_empty() {
            uri.clone()
        } else {
            skill.clone()
        },
        reason,
    })?;
    let files = definition["resources"].as_array().map(|files| {
        files
            .iter()
            .map(|f| SkillFileRef {
                uri: f["uri"].as_str().unwrap_or_default().to_owned(),
                digest: f["digest"].as_str().unwrap_or_default().to_owned(),
                size: f["size"].as_u64().unwrap_or_default(),
            })
            .collect()
    });
    Ok(SkillEntry {
        name: QualifiedName::new(server, &skill).into_string(),
        server: server.to_owned(),
        description: definition["frontmatter"]["description"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        skill,
        uri,
        files,
        definition,
    })
}

/// Names one server's skills apart: skills that share a name are each named by their path
/// (the extension: names are labels, and a host must not keep one of two alike).
fn name_apart(entries: &mut [SkillEntry]) {
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for e in entries.iter() {
        *count.entry(e.name.clone()).or_default() += 1;
    }
    for e in entries.iter_mut() {
        if count[&e.name] > 1 {
            e.name = QualifiedName::hashed(&e.server, e.path()).into_string();
        }
    }
}

/// `uri`'s path inside the folder `root` (a skill's URI without `SKILL.md`): plain segments,
/// `.` and `..` resolved inside it, percent-escapes decoded; `None` for anything that would
/// leave it or name no file.
fn relative_path(root: &str, uri: &str) -> Option<String> {
    let rest = uri.strip_prefix(root)?;
    if rest.contains(['?', '#', '\\']) {
        return None;
    }
    let mut segments: Vec<String> = Vec::new();
    for raw in rest.split('/') {
        let segment = percent_decode(raw)?;
        match segment.as_str() {
            "" | "." => {}
            ".." => {
                segments.pop()?;
            }
            _ if segment.contains(['/', '\\', '\0']) => return None,
            _ => segments.push(segment),
        }
    }
    (!segments.is_empty() && !rest.ends_with('/')).then(|| segments.join("/"))
}

/// `%XX` escapes decoded (UTF-8); `None` for a broken escape or bytes that are not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The bytes of a `resources/read` result for `uri` (its `text` as UTF-8, or its `blob`
/// decoded), and its MIME type.
fn contents_bytes(result: &Value, uri: &str) -> Result<(Vec<u8>, Option<String>), String> {
    let contents = result["contents"].as_array().cloned().unwrap_or_default();
    let content = contents
        .iter()
        .find(|c| c["uri"] == uri)
        .or_else(|| contents.first())
        .ok_or_else(|| "the read gave no contents".to_owned())?;
    let mime_type = content["mimeType"].as_str().map(str::to_owned);
    if let Some(text) = content["text"].as_str() {
        return Ok((text.as_bytes().to_vec(), mime_type));
    }
    let blob = content["blob"]
        .as_str()
        .ok_or_else(|| "the read gave neither text nor a blob".to_owned())?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(blob)
        .map_err(|e| format!("its blob is not base64: {e}"))?;
    Ok((bytes, mime_type))
}

/// Whether a `SKILL.md`'s frontmatter says the same `name` and `description` as the entry's
/// (`frontmatter`). Only plain and quoted one-line values are read (the library has no YAML
/// parser): a value written over several lines is not compared. A `SKILL.md` without
/// frontmatter, or without a `name`, differs.
fn frontmatter_matches(bytes: &[u8], frontmatter: &Value) -> Result<(), String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "the SKILL.md is not UTF-8".to_owned())?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Err("the SKILL.md does not begin with frontmatter (---)".to_owned());
    }
    let mut found = BTreeMap::new();
    for line in lines.by_ref() {
        if line.trim_end() == "---" {
            break;
        }
        if line.starts_with([' ', '\t', '#']) {
            continue;
        }
        if let Some((key, value)) = line.split_once(':')
            && matches!(key, "name" | "description")
        {
            found.insert(key, scalar(value.trim()));
        }
    }
    for key in ["name", "description"] {
        let said = frontmatter[key].as_str().unwrap_or_default();
        match found.get(key) {
            Some(Some(value)) if value == said => {}
            // Folded or literal blocks, and the like: not read here.
            Some(None) => {}
            Some(Some(value)) => {
                return Err(format!(
                    "its frontmatter's {key} is {value:?}, the entry says {said:?}"
                ));
            }
            None => return Err(format!("its frontmatter has no {key}")),
        }
    }
    Ok(())
}

/// A one-line YAML scalar: plain (a trailing ` #` comment cut), `'single'` or `"double"`
/// quoted (simple escapes); `None` for a block (`|`, `>`) or anything else this does not read.
fn scalar(value: &str) -> Option<String> {
    if value.is_empty() || value.starts_with(['|', '>', '&', '*', '!', '[', '{']) {
        return None;
    }
    if let Some(inner) = value.strip_prefix('\'') {
        return Some(inner.strip_suffix('\'')?.replace("''", "'"));
    }
    if value.starts_with('"') {
        return serde_json::from_str::<String>(value).ok();
    }
    let plain = value.split(" #").next().unwrap_or(value).trim_end();
    Some(plain.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_stay_inside_the_skill_folder() {
        let root = "skill://a/b/";
        assert_eq!(
            relative_path(root, "skill://a/b/refs/x%20y.md").as_deref(),
            Some("refs/x y.md")
        );
        assert_eq!(
            relative_path(root, "skill://a/b/refs/../SKILL.md").as_deref(),
            Some("SKILL.md")
        );
        assert_eq!(relative_path(root, "skill://a/b/../c.md"), None);
        assert_eq!(relative_path(root, "skill://a/b/%2e%2e/c.md"), None);
        assert_eq!(relative_path(root, "skill://a/b/x%2Fy.md"), None);
        assert_eq!(relative_path(root, "skill://a/c/x.md"), None);
        assert_eq!(relative_path(root, "skill://a/b/refs/"), None);
    }

    #[test]
    fn frontmatter_is_compared_by_name_and_description() {
        let entry = json!({"name": "review", "description": "Reviews code: carefully"});
        let md = b"---\nname: review\ndescription: \"Reviews code: carefully\"\n---\nbody\n";
        assert_eq!(frontmatter_matches(md, &entry), Ok(()));
        let other = b"---\nname: review\ndescription: Something else\n---\n";
        assert!(
            frontmatter_matches(other, &entry)
                .unwrap_err()
                .contains("description")
        );
        let folded = b"---\nname: review\ndescription: >\n  Reviews code\n---\n";
        assert_eq!(frontmatter_matches(folded, &entry), Ok(()));
        assert!(frontmatter_matches(b"# no frontmatter\n", &entry).is_err());
    }
}
