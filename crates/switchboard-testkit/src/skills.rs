//! Skills (SEP-2640) served from a folder (`testkit-server --skills DIR`): each folder below
//! `DIR` that holds a `SKILL.md` is a skill at `skill://<its path>/SKILL.md`, its manifest
//! every file below it (a nested skill's too, as the extension asks), each with its SHA-256
//! digest and size; `skills/list`, `skills/get` and `resources/read` answer from what was
//! read at start. `--skills-tamper` changes one byte of every file other than a `SKILL.md`
//! when it is read, so its bytes no longer match their digest (their size does).
//!
//! The fixture folder ([`fixture_dir`]) holds two skills: `code-review` (its `SKILL.md`,
//! `references/checklist.md`) and, nested in it, `security` (`code-review/security`: its
//! `SKILL.md`, `scripts/scan.sh`). rmcp's own `SkillCatalog` (feature `skills-fs`) would serve
//! the same, but brings crates the workspace's lock file does not hold.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rmcp::ErrorData;
use rmcp::model::{
    GetSkillResult, ListSkillsResult, ReadResourceResult, Resource, ResourceContents, Skill,
    SkillFrontmatter, SkillResource, SkillResources,
};
use serde_json::{Value, json};

/// The URI scheme of the skills served.
const SCHEME: &str = "skill://";

/// The fixture folder of skills.
pub fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/skills")
}

/// A configuration entry running `testkit-server --skills <fixture>` over stdio, with `extra`
/// flags (`--skills-tamper`).
pub fn entry(extra: &[&str]) -> Value {
    let mut args = vec!["--skills".to_owned(), fixture_dir().display().to_string()];
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    json!({"command": crate::server_bin().display().to_string(), "args": args})
}

/// The skills of a folder, read once.
#[derive(Debug)]
pub(crate) struct Shelf {
    skills: Vec<Skill>,
    /// Every file's bytes, by URI.
    files: BTreeMap<String, Vec<u8>>,
    tamper: bool,
}

impl Shelf {
    /// Reads every skill below `root`.
    pub(crate) fn load(root: &Path, tamper: bool) -> std::io::Result<Shelf> {
        let mut files = BTreeMap::new();
        walk(root, "", &mut files)?;
        let mut skills = Vec::new();
        for (path, bytes) in &files {
            let Some(dir) = path.strip_suffix("/SKILL.md") else {
                continue;
            };
            let frontmatter = frontmatter(bytes).ok_or_else(|| {
                std::io::Error::other(format!("{path}: no name and description in frontmatter"))
            })?;
            let manifest = files
                .iter()
                .filter(|(p, _)| p.starts_with(&format!("{dir}/")))
                .map(|(p, b)| SkillResource::from_bytes(format!("{SCHEME}{p}"), b))
                .collect();
            skills.push(Skill::new(
                format!("{SCHEME}{path}"),
                frontmatter,
                SkillResources::Files(manifest),
            ));
        }
        let files = files
            .into_iter()
            .map(|(path, bytes)| (format!("{SCHEME}{path}"), bytes))
            .collect();
        Ok(Shelf {
            skills,
            files,
            tamper,
        })
    }

    pub(crate) fn list(&self) -> ListSkillsResult {
        ListSkillsResult::with_all_items(self.skills.clone())
    }

    pub(crate) fn get(&self, uri: &str) -> Result<GetSkillResult, ErrorData> {
        self.skills
            .iter()
            .find(|s| s.uri == uri)
            .map(|s| GetSkillResult::new(s.clone()))
            .ok_or_else(|| ErrorData::invalid_params(format!("no skill is served at {uri}"), None))
    }

    /// Each skill's `SKILL.md`, for `resources/list`.
    pub(crate) fn resources(&self) -> Vec<Resource> {
        self.skills
            .iter()
            .map(|s| {
                Resource::new(s.uri.clone(), s.name())
                    .with_description(s.frontmatter.description.clone())
                    .with_mime_type("text/markdown")
            })
            .collect()
    }

    /// `resources/read` of a skill's file; `None` when `uri` is none.
    pub(crate) fn read(&self, uri: &str) -> Option<ReadResourceResult> {
        let mut bytes = self.files.get(uri)?.clone();
        if self.tamper
            && !uri.ends_with("/SKILL.md")
            && let Some(first) = bytes.first_mut()
        {
            *first = if *first == b'X' { b'Y' } else { b'X' };
        }
        let contents = match String::from_utf8(bytes) {
            Ok(text) => ResourceContents::text(text, uri),
            Err(e) => {
                use base64::Engine;
                let blob = base64::engine::general_purpose::STANDARD.encode(e.into_bytes());
                ResourceContents::blob(blob, uri)
            }
        };
        let mime_type = if uri.ends_with(".md") {
            "text/markdown"
        } else {
            "text/plain"
        };
        Some(ReadResourceResult::new(vec![
            contents.with_mime_type(mime_type),
        ]))
    }
}

/// Every file below `dir` (hidden ones left out), by its `/`-separated path from the root.
fn walk(dir: &Path, prefix: &str, files: &mut BTreeMap<String, Vec<u8>>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        if entry.file_type()?.is_dir() {
            walk(&entry.path(), &path, files)?;
        } else {
            files.insert(path, std::fs::read(entry.path())?);
        }
    }
    Ok(())
}

/// A `SKILL.md`'s frontmatter: its `key: value` lines (plain or double-quoted values).
fn frontmatter(bytes: &[u8]) -> Option<SkillFrontmatter> {
    let text = std::str::from_utf8(bytes).ok()?;
    let body = text.strip_prefix("---\n")?;
    let block = &body[..body.find("\n---")?];
    let mut fields: BTreeMap<&str, String> = BTreeMap::new();
    for line in block.lines() {
        let (key, value) = line.split_once(':')?;
        let value = value.trim();
        let value = serde_json::from_str::<String>(value).unwrap_or_else(|_| value.to_owned());
        fields.insert(key.trim(), value);
    }
    let mut frontmatter =
        SkillFrontmatter::new(fields.remove("name")?, fields.remove("description")?);
    for (key, value) in fields {
        frontmatter = frontmatter.with_field(key, value);
    }
    Some(frontmatter)
}
