//! Named profiles served side by side (`/mcp/<profile>`, [`crate::http`]): each path a view of
//! the one host's catalogue, with its own search mode. The view narrows what the gateway's
//! tool rules ([`crate::rules`]) let through; it never widens it.
//!
//! A tool outside the profile is left out of the path's listings and searches, its changes are
//! not announced there, and its call is refused with an error naming the profile (a tool the
//! rules hide is still refused as an unknown one first).

use std::collections::HashSet;

use wildmatch::WildMatch;

use crate::ToolSearch;

/// One profile as a path serves it.
#[derive(Debug)]
pub struct ProfileView {
    name: String,
    /// Its servers.
    servers: HashSet<String>,
    /// The tools it offers, as qualified-name patterns (`mcp__gh` stands for `mcp__gh__*`);
    /// `None`: every tool of its servers.
    tools: Option<Vec<WildMatch>>,
    /// Its search mode; `None`: the gateway's.
    search: Option<ToolSearch>,
}

impl ProfileView {
    /// The view of `profile`; its `toolSearch`, when written, is its search mode (an error
    /// names the profile when it is not one).
    pub fn new(profile: &switchboard::config::Profile) -> Result<ProfileView, String> {
        // Its path's last segment: no `/`, nothing the router reads as a parameter.
        if profile.name.is_empty()
            || !profile
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return Err(format!(
                "profile `{}` ({}) is not served on a path: a path's profile name has only \
                 letters, digits, `-`, `_` and `.`",
                profile.name,
                profile.file.display()
            ));
        }
        let search = match &profile.tool_search {
            Some(text) => Some(
                text.parse::<ToolSearch>()
                    .map_err(|e| format!("profile `{}`: toolSearch {e}", profile.name))?,
            ),
            None => None,
        };
        let tools = profile.tools.as_ref().map(|patterns| {
            patterns
                .iter()
                .map(|pattern| {
                    let whole_server = pattern
                        .strip_prefix("mcp__")
                        .is_some_and(|rest| !rest.contains("__"));
                    if whole_server {
                        WildMatch::new(&format!("{pattern}__*"))
                    } else {
                        WildMatch::new(pattern)
                    }
                })
                .collect()
        });
        Ok(ProfileView {
            name: profile.name.clone(),
            servers: profile.servers.iter().cloned().collect(),
            tools,
            search,
        })
    }

    /// The profile's name (its path's last segment).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its search mode, if it has its own.
    pub fn search(&self) -> Option<ToolSearch> {
        self.search
    }

    /// Whether the profile offers the tool of qualified name `qualified`.
    pub(crate) fn offers(&self, qualified: &str) -> bool {
        switchboard::QualifiedName::split(qualified).is_some_and(|(server, _)| {
            self.servers.contains(server)
                && self
                    .tools
                    .as_ref()
                    .is_none_or(|tools| tools.iter().any(|p| p.matches(qualified)))
        })
    }

    /// Whether the profile starts `server`.
    pub(crate) fn has_server(&self, server: &str) -> bool {
        self.servers.contains(server)
    }

    /// The error a call of `requested`, a tool outside the profile, gets.
    pub(crate) fn refusal(&self, requested: &str) -> String {
        let mut servers: Vec<String> = self.servers.iter().map(|s| format!("`{s}`")).collect();
        servers.sort();
        format!(
            "tool `{requested}` is not in profile `{}` (served at {}/{}; its servers: {})",
            self.name,
            crate::http::MCP_PATH,
            self.name,
            servers.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(tools: Option<&[&str]>, search: Option<&str>) -> switchboard::config::Profile {
        switchboard::config::Profile {
            name: "p".into(),
            servers: vec!["gh".into(), "fs".into()],
            tools: tools.map(|t| t.iter().map(|s| (*s).to_owned()).collect()),
            tool_search: search.map(str::to_owned),
            file: std::path::PathBuf::new(),
        }
    }

    #[test]
    fn a_view_offers_its_servers_tools_by_their_patterns() {
        let all = ProfileView::new(&profile(None, None)).unwrap();
        assert!(all.offers("mcp__gh__anything"));
        assert!(!all.offers("mcp__other__anything"));
        assert!(all.has_server("fs") && !all.has_server("other"));
        assert_eq!(all.search(), None);
        let some =
            ProfileView::new(&profile(Some(&["mcp__gh__get_*", "mcp__fs"]), Some("on"))).unwrap();
        assert!(some.offers("mcp__gh__get_issue"));
        assert!(!some.offers("mcp__gh__create_issue"));
        assert!(some.offers("mcp__fs__write"));
        assert!(!some.offers("mcp__fsx__write"));
        assert_eq!(some.search(), Some(ToolSearch::On));
        let refused = some.refusal("mcp__x__y");
        assert!(
            refused.contains("not in profile `p`") && refused.contains("`fs`, `gh`"),
            "{refused}"
        );
        let bad = ProfileView::new(&profile(None, Some("sometimes"))).unwrap_err();
        assert!(bad.contains("profile `p`"), "{bad}");
        let mut named = profile(None, None);
        named.name = "a/{b}".into();
        let bad = ProfileView::new(&named).unwrap_err();
        assert!(bad.contains("not served on a path"), "{bad}");
    }
}
