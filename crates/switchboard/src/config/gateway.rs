//! The user file's `gateway` section: `switchboard serve`'s tool rules, each a string as
//! `--allow-tool` / `--deny-tool` take it, and its rate limits, each as `--rate-limit` takes it
//! (the gateway parses and applies them).
//!
//! ```json
//! "gateway": {
//!   "allowTools": ["scope:read=mcp__github__get_*", "sub:alice=mcp__*"],
//!   "denyTools": ["mcp__shell__*"],
//!   "rateLimits": ["sub:*=60/min", "tool:mcp__github__*=10/s"]
//! }
//! ```
//!
//! Only the user's own file holds it: a project's files could otherwise widen what a gateway
//! serves to whom.

use std::path::PathBuf;

use super::settings::{Checked, GatewayFile, Located, Object, PatternList, PatternText};
use super::{ConfigIssue, ConfigSet, Scope};

/// One rule of `gateway.allowTools` or `gateway.denyTools`, with where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayToolRule {
    /// The rule as written.
    pub rule: String,
    /// From `denyTools` (else `allowTools`).
    pub deny: bool,
    pub file: PathBuf,
    /// 1-based line and column.
    pub position: (usize, usize),
    /// `gateway.allowTools[2]`.
    pub field: String,
}

impl GatewayToolRule {
    /// An error about this rule, naming its file, position and field.
    pub fn issue(&self, message: impl Into<String>) -> ConfigIssue {
        ConfigIssue::error(message)
            .in_file(&self.file)
            .at(self.position)
            .field(self.field.clone())
    }
}

/// One limit of `gateway.rateLimits`, with where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayRateLimit {
    /// The limit as written (`sub:*=60/min`).
    pub limit: String,
    pub file: PathBuf,
    /// 1-based line and column.
    pub position: (usize, usize),
    /// `gateway.rateLimits[0]`.
    pub field: String,
}

impl GatewayRateLimit {
    /// An error about this limit, naming its file, position and field.
    pub fn issue(&self, message: impl Into<String>) -> ConfigIssue {
        ConfigIssue::error(message)
            .in_file(&self.file)
            .at(self.position)
            .field(self.field.clone())
    }
}

/// What the `gateway` section holds: its rules and rate limits, and its problems (unknown keys
/// are warnings; a value of the wrong kind is an error).
#[derive(Debug, Clone, Default)]
pub struct GatewaySettings {
    pub tool_rules: Vec<GatewayToolRule>,
    pub rate_limits: Vec<GatewayRateLimit>,
    pub issues: Vec<ConfigIssue>,
}

const KEYS: [&str; 3] = ["allowTools", "denyTools", "rateLimits"];

/// Which list of the section an item is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Allow,
    Deny,
    RateLimit,
}

impl ConfigSet {
    /// The user file's `gateway` section.
    pub fn gateway_settings(&self) -> GatewaySettings {
        let mut out = GatewaySettings::default();
        let Some(user) = self.settings(Scope::User) else {
            return out;
        };
        let broken = |field: &str| match user.error_at(field) {
            Some(error) => error.issue(&user.file),
            None => ConfigIssue::error("cannot be read")
                .in_file(&user.file)
                .field(field.to_owned()),
        };
        let GatewayFile {
            allow_tools,
            deny_tools,
            rate_limits,
        } = match &user.sections.gateway {
            Checked::Absent => return out,
            Checked::Broken => {
                out.issues.push(broken("gateway"));
                return out;
            }
            Checked::Ok(Object(file)) => file,
        };
        for unknown in user.unknown_in("gateway") {
            out.issues.push(
                ConfigIssue::warning(format!(
                    "unknown field; expected {}",
                    super::settings::one_of(&KEYS)
                ))
                .in_file(&user.file)
                .at(unknown.position)
                .field(unknown.field.clone()),
            );
        }
        for (key, kind, list) in [
            ("allowTools", Kind::Allow, allow_tools),
            ("denyTools", Kind::Deny, deny_tools),
            ("rateLimits", Kind::RateLimit, rate_limits),
        ] {
            let field = format!("gateway.{key}");
            let items = match list {
                Checked::Absent => continue,
                Checked::Broken => {
                    out.issues.push(broken(&field));
                    continue;
                }
                Checked::Ok(Located {
                    value: PatternList(items),
                    ..
                }) => items,
            };
            for (i, item) in items.iter().enumerate() {
                let field = format!("{field}[{i}]");
                match item {
                    Checked::Ok(Located {
                        at,
                        value: PatternText(rule),
                        ..
                    }) if kind == Kind::RateLimit => out.rate_limits.push(GatewayRateLimit {
                        limit: rule.clone(),
                        file: user.file.clone(),
                        position: *at,
                        field,
                    }),
                    Checked::Ok(Located {
                        at,
                        value: PatternText(rule),
                        ..
                    }) => out.tool_rules.push(GatewayToolRule {
                        rule: rule.clone(),
                        deny: kind == Kind::Deny,
                        file: user.file.clone(),
                        position: *at,
                        field,
                    }),
                    Checked::Broken => out.issues.push(broken(&field)),
                    Checked::Absent => {}
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{ConfigPaths, ConfigSet, Environment};

    fn load(user: &str) -> (tempfile::TempDir, ConfigSet) {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        std::fs::create_dir_all(home.join(".config/switchboard")).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(home.join(".config/switchboard/mcp.json"), user).unwrap();
        let env: Environment = [
            ("HOME".to_owned(), home.display().to_string()),
            (
                "XDG_CONFIG_HOME".to_owned(),
                home.join(".config").display().to_string(),
            ),
        ]
        .into_iter()
        .collect();
        let paths = ConfigPaths::discover(&project, &env);
        let set = ConfigSet::load(paths, &env);
        (dir, set)
    }

    #[test]
    fn rules_come_with_their_file_line_and_field() {
        let (_dir, set) = load(
            "{\n  \"gateway\": {\n    \"allowTools\": [\"scope:read=mcp__gh__get_*\"],\n    \"denyTools\": [\"mcp__shell__*\", 3],\n    \"allowTool\": [],\n    \"rateLimits\": [\"sub:*=60/min\"]\n  }\n}\n",
        );
        let settings = set.gateway_settings();
        let rules: Vec<(&str, bool, (usize, usize), &str)> = settings
            .tool_rules
            .iter()
            .map(|r| (r.rule.as_str(), r.deny, r.position, r.field.as_str()))
            .collect();
        assert_eq!(
            rules,
            [
                (
                    "scope:read=mcp__gh__get_*",
                    false,
                    (3, 20),
                    "gateway.allowTools[0]"
                ),
                ("mcp__shell__*", true, (4, 19), "gateway.denyTools[0]"),
            ]
        );
        let limits: Vec<(&str, (usize, usize), &str)> = settings
            .rate_limits
            .iter()
            .map(|l| (l.limit.as_str(), l.position, l.field.as_str()))
            .collect();
        assert_eq!(limits, [("sub:*=60/min", (6, 20), "gateway.rateLimits[0]")]);
        let issues: Vec<String> = settings.issues.iter().map(|i| i.to_string()).collect();
        assert_eq!(issues.len(), 2, "{issues:?}");
        assert!(settings.issues[0].is_error() || settings.issues[1].is_error());
        let text = issues.join("\n");
        assert!(text.contains("gateway.denyTools[1]"), "{text}");
        assert!(text.contains("gateway.allowTool"), "{text}");
        assert!(text.contains("mcp.json"), "{text}");
    }
}
