//! Named profiles: the servers a profile starts and the tools it offers, from the user's file
//! or the managed file (a managed profile of the same name is the one used).
//!
//! ```json
//! "profiles": {
//!   "review": {"servers": ["gh", "fs"], "tools": ["mcp__gh__*", "mcp__fs__read_*"]},
//!   "triage": {"servers": ["gh"], "toolSearch": "on"}
//! }
//! ```
//!
//! `tools` holds tool patterns as permission rules write them (`mcp__<server>__<tool>`, `*`
//! anywhere); without it, every tool of the profile's servers. Permission rules still apply
//! on top. [`HostBuilder::profile`](crate::host::HostBuilder::profile) applies one; the
//! HTTP gateway serves each on its own path, where `toolSearch` (`on`, `off`, `auto:N`, as
//! `serve --tool-search` takes it) is its search mode.

use std::collections::BTreeMap;
use std::path::PathBuf;

use wildmatch::WildMatch;

use super::settings::{Checked, Located, Object, PatternList, PatternText, ProfileFile};
use super::{ConfigIssue, ConfigSet, Scope};

/// One named profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub name: String,
    /// The servers it starts, by name.
    pub servers: Vec<String>,
    /// The tools it offers (qualified-name patterns); `None`: every tool of its servers.
    pub tools: Option<Vec<String>>,
    /// The gateway's search mode on the profile's path, as written (`on`, `off` or
    /// `auto:N`, checked); `None`: the gateway's own.
    pub tool_search: Option<String>,
    /// The file it is written in.
    pub file: PathBuf,
}

impl Profile {
    /// The tool patterns that apply to `server`'s tools, as patterns of the tools' own names:
    /// `None` when the profile offers every tool of its servers.
    pub fn tool_patterns_for(&self, server: &str) -> Option<Vec<String>> {
        let tools = self.tools.as_ref()?;
        Some(
            tools
                .iter()
                .filter_map(|pattern| {
                    let rest = pattern.strip_prefix("mcp__")?;
                    // `mcp__<server>__<tool>`: the server part ends at the first `__` it
                    // matches as a whole.
                    let mut from = 0;
                    while let Some(at) = rest[from..].find("__") {
                        let (server_part, tool_part) = (&rest[..from + at], &rest[from + at + 2..]);
                        if WildMatch::new(server_part).matches(server) {
                            return Some(tool_part.to_owned());
                        }
                        from += at + 2;
                    }
                    // `mcp__gh` or `mcp__g*`: every tool of a server it matches.
                    (!rest.contains("__") && WildMatch::new(rest).matches(server))
                        .then(|| "*".to_owned())
                })
                .collect(),
        )
    }
}

/// The profiles of the user's and the managed file, and their problems (unknown keys are
/// warnings; a value of the wrong kind is an error, and its profile is left out).
#[derive(Debug, Clone, Default)]
pub struct Profiles {
    pub profiles: BTreeMap<String, Profile>,
    pub issues: Vec<ConfigIssue>,
}

const KEYS: [&str; 3] = ["servers", "tools", "toolSearch"];

impl ConfigSet {
    /// The named profiles (`profiles` in the user's file and the managed file; a managed
    /// profile wins over a user's of the same name). A profile naming a server no scope
    /// configures is an error of that profile.
    pub fn profiles(&self) -> Profiles {
        let mut out = Profiles::default();
        for scope in [Scope::User, Scope::Managed] {
            let Some(settings) = self.settings(scope) else {
                continue;
            };
            let broken = |field: &str| match settings.error_at(field) {
                Some(error) => error.issue(&settings.file),
                None => ConfigIssue::error("cannot be read")
                    .in_file(&settings.file)
                    .field(field.to_owned()),
            };
            let map = match &settings.sections.profiles {
                Checked::Absent => continue,
                Checked::Broken => {
                    out.issues.push(broken("profiles"));
                    continue;
                }
                Checked::Ok(Object(map)) => map,
            };
            for (name, profile) in map {
                let field = format!("profiles.{name}");
                let ProfileFile {
                    servers,
                    tools,
                    tool_search,
                } = match profile {
                    Checked::Absent => continue,
                    Checked::Broken => {
                        out.issues.push(broken(&field));
                        continue;
                    }
                    Checked::Ok(Object(file)) => file,
                };
                for unknown in settings.unknown_in(&field) {
                    out.issues.push(
                        ConfigIssue::warning(format!(
                            "unknown field; expected {}",
                            super::settings::one_of(&KEYS)
                        ))
                        .in_file(&settings.file)
                        .at(unknown.position)
                        .field(unknown.field.clone()),
                    );
                }
                let mut failed = false;
                let mut list = |key: &str, value: &Checked<Located<PatternList>>| {
                    let field = format!("{field}.{key}");
                    let items = match value {
                        Checked::Absent => return None,
                        Checked::Broken => {
                            out.issues.push(broken(&field));
                            failed = true;
                            return None;
                        }
                        Checked::Ok(Located {
                            value: PatternList(items),
                            ..
                        }) => items,
                    };
                    let mut texts = Vec::new();
                    for (i, item) in items.iter().enumerate() {
                        match item {
                            Checked::Ok(Located {
                                value: PatternText(text),
                                ..
                            }) => texts.push(text.clone()),
                            Checked::Broken => {
                                out.issues.push(broken(&format!("{field}[{i}]")));
                                failed = true;
                            }
                            Checked::Absent => {}
                        }
                    }
                    let at = match value {
                        Checked::Ok(located) => Some(located.at),
                        _ => None,
                    };
                    Some((texts, at))
                };
                let servers = list("servers", servers);
                let tools = list("tools", tools).map(|(texts, _)| texts);
                let tool_search = match tool_search {
                    Checked::Absent => None,
                    Checked::Broken => {
                        out.issues.push(broken(&format!("{field}.toolSearch")));
                        continue;
                    }
                    Checked::Ok(Located {
                        value: PatternText(text),
                        at,
                        ..
                    }) => {
                        if !is_search_mode(text) {
                            out.issues.push(
                                ConfigIssue::error(format!(
                                    "`{text}`: use `on`, `off` or `auto:N` (N tokens of tool \
                                     definitions)"
                                ))
                                .in_file(&settings.file)
                                .at(*at)
                                .field(format!("{field}.toolSearch")),
                            );
                            continue;
                        }
                        Some(text.clone())
                    }
                };
                if failed {
                    continue;
                }
                let Some((servers, at)) = servers else {
                    out.issues.push(
                        ConfigIssue::error("a profile names the servers it starts (`servers`)")
                            .in_file(&settings.file)
                            .field(field.clone()),
                    );
                    continue;
                };
                let missing: Vec<&String> =
                    servers.iter().filter(|s| self.get(s).is_none()).collect();
                if !missing.is_empty() {
                    let names: Vec<String> = missing.iter().map(|s| format!("`{s}`")).collect();
                    let mut issue = ConfigIssue::error(format!(
                        "names {} that no scope configures",
                        names.join(", ")
                    ))
                    .in_file(&settings.file)
                    .field(format!("{field}.servers"));
                    if let Some(at) = at {
                        issue = issue.at(at);
                    }
                    out.issues.push(issue);
                    continue;
                }
                out.profiles.insert(
                    name.clone(),
                    Profile {
                        name: name.clone(),
                        servers,
                        tools,
                        tool_search,
                        file: settings.file.clone(),
                    },
                );
            }
        }
        out
    }

    /// The profile `name`, or why it cannot be used: an error naming it and the profiles
    /// there are (or its own problem).
    pub fn profile(&self, name: &str) -> Result<Profile, String> {
        let profiles = self.profiles();
        if let Some(profile) = profiles.profiles.get(name) {
            return Ok(profile.clone());
        }
        let prefix = format!("profiles.{name}");
        if let Some(issue) = profiles.issues.iter().find(|i| {
            i.is_error()
                && i.field
                    .as_deref()
                    .is_some_and(|f| f == prefix || f.starts_with(&format!("{prefix}.")))
        }) {
            return Err(format!("profile `{name}` cannot be used: {issue}"));
        }
        let known: Vec<String> = profiles.profiles.keys().map(|k| format!("`{k}`")).collect();
        Err(if known.is_empty() {
            format!("no profile named `{name}`: no file defines `profiles`")
        } else {
            format!("no profile named `{name}`; there are {}", known.join(", "))
        })
    }
}

/// Whether `text` is a search mode the gateway takes (`serve --tool-search`).
fn is_search_mode(text: &str) -> bool {
    matches!(text, "on" | "off")
        || text
            .strip_prefix("auto:")
            .is_some_and(|n| n.parse::<u64>().is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(tools: Option<&[&str]>) -> Profile {
        Profile {
            name: "p".into(),
            servers: vec!["gh".into(), "fs".into()],
            tools: tools.map(|t| t.iter().map(|s| (*s).to_owned()).collect()),
            tool_search: None,
            file: PathBuf::new(),
        }
    }

    #[test]
    fn tool_patterns_are_split_per_server() {
        assert_eq!(profile(None).tool_patterns_for("gh"), None);
        let p = profile(Some(&[
            "mcp__gh__*",
            "mcp__fs__read_*",
            "mcp__*__search",
            "mcp__fs",
        ]));
        assert_eq!(
            p.tool_patterns_for("gh").unwrap(),
            ["*", "search"].map(str::to_owned)
        );
        assert_eq!(
            p.tool_patterns_for("fs").unwrap(),
            ["read_*", "search", "*"].map(str::to_owned)
        );
        assert!(p.tool_patterns_for("other").unwrap() == ["search"]);
    }
}
