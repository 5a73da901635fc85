//! Skills (SEP-2640) at the rmcp boundary: `skills/list` (every page) and `skills/get` as MCP
//! JSON, and the checks the extension asks of a host that rmcp's types carry: an entry's
//! structural rules ([`check_entry`]) and a file's digest and size ([`verify_file`]).

use rmcp::model::{GetSkillRequestParams, Skill, SkillResource};
use serde_json::Value;

use super::Session;
use super::requests::{CacheHints, RequestError, as_value};

impl Session {
    /// Every skill the server lists (all pages), each entry as MCP JSON (`uri`,
    /// `frontmatter`, `resources`).
    pub(crate) async fn list_skills(&self) -> Result<Vec<Value>, RequestError> {
        let peer = self.peer().clone();
        self.paged("skills", |params| {
            let peer = peer.clone();
            async move {
                let result = peer.list_skills(params).await?;
                let hints = CacheHints::of(result.ttl_ms, result.cache_scope.as_ref());
                Ok((
                    result.skills.iter().map(as_value).collect(),
                    result.next_cursor,
                    hints,
                ))
            }
        })
        .await
    }

    /// `skills/get`: the entry of the skill whose `SKILL.md` is at `uri`, as MCP JSON.
    pub(crate) async fn get_skill(&self, uri: &str) -> Result<Value, RequestError> {
        let result = self
            .peer()
            .get_skill(GetSkillRequestParams::new(uri))
            .await?;
        Ok(as_value(&result.skill))
    }
}

/// Whether an entry keeps the extension's rules that need no file: its URI ends in
/// `/<name>/SKILL.md`, a valid name, a manifest (unless `"dynamic"`) that lists its own
/// `SKILL.md` and only files inside the skill's folder, each once, with well-formed digests.
/// The error says which rule it breaks.
pub(crate) fn check_entry(entry: &Value) -> Result<(), String> {
    let skill: Skill = serde_json::from_value(entry.clone()).map_err(|e| e.to_string())?;
    skill.validate().map_err(|e| e.to_string())
}

/// Whether `bytes` are what the manifest says the file at `uri` holds: its size first, then
/// its SHA-256 digest. The error says what differs.
pub(crate) fn verify_file(uri: &str, digest: &str, size: u64, bytes: &[u8]) -> Result<(), String> {
    SkillResource::new(uri, digest, size)
        .verify(bytes)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_file_verifies_only_with_its_own_bytes() {
        let entry = SkillResource::from_bytes("skill://a/SKILL.md", b"abc");
        assert!(verify_file(&entry.uri, &entry.digest, entry.size, b"abc").is_ok());
        let same_size = verify_file(&entry.uri, &entry.digest, entry.size, b"abd").unwrap_err();
        assert!(same_size.contains("digest"), "{same_size}");
        let longer = verify_file(&entry.uri, &entry.digest, entry.size, b"abcd").unwrap_err();
        assert!(longer.contains("4 bytes"), "{longer}");
    }

    #[test]
    fn an_entry_with_a_file_outside_its_folder_is_refused() {
        let md = SkillResource::from_bytes("skill://a/SKILL.md", b"");
        let outside = SkillResource::from_bytes("skill://b/x.md", b"");
        let entry = json!({
            "uri": "skill://a/SKILL.md",
            "frontmatter": {"name": "a", "description": "A"},
            "resources": [md, outside],
        });
        assert!(check_entry(&entry).unwrap_err().contains("skill://b/x.md"));
    }
}
