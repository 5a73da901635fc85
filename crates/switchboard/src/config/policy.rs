//! Managed policy: the administrator's allow-list, deny-list and exclusive mode, applied to
//! every entry that did not come from the managed file itself.
//!
//! ```json
//! "policy": {
//!   "exclusive": false,
//!   "allow": [{"name": "github"}, {"command": ["npx", "-y", "@acme/mcp"]}, {"url": "https://*.acme.com/*"}],
//!   "deny":  [{"name": "untrusted-*"}]
//! }
//! ```
//! A deny match always wins. When an allow-list is present, an entry must match it; and once
//! the list has any `command` rule, a local server must match a `command` rule (a name alone
//! can be copied by anyone), likewise `url` rules for remote servers.

use serde::Deserialize;
use wildmatch::WildMatch;

use super::de::{self, Checked, Located};
use super::settings::Object;
use super::{ConfigIssue, Scope, ServerConfig, Transport};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyRule {
    /// A server name; `*` and `?` are wildcards.
    Name(String),
    /// The exact program and arguments of a local server.
    Command(Vec<String>),
    /// A URL pattern; `*` and `?` are wildcards.
    Url(String),
}

impl std::fmt::Display for PolicyRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PolicyRule::Name(n) => write!(f, "name `{n}`"),
            PolicyRule::Command(c) => write!(f, "command `{}`", c.join(" ")),
            PolicyRule::Url(u) => write!(f, "url `{u}`"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyVerdict {
    Allowed,
    /// Denied, with the reason shown to the user.
    Denied(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Policy {
    /// `None`: no allow-list, everything not denied is allowed.
    pub allow: Option<Vec<PolicyRule>>,
    pub deny: Vec<PolicyRule>,
    /// Only managed servers load.
    pub exclusive: bool,
    /// Set when the managed file could not be read: nothing but managed servers may start.
    pub broken: bool,
}

impl Policy {
    /// A policy that denies everything but managed servers, for a managed file that is broken:
    /// an administrator's restriction must not vanish because of a typo.
    pub fn fail_closed() -> Policy {
        Policy {
            broken: true,
            ..Policy::default()
        }
    }

    /// The policy of the managed file as read: the first problem in it (a broken value, or a
    /// key `policy` does not take, whichever is written first) fails it.
    pub(crate) fn from_file(
        file: &std::path::Path,
        read: &Checked<Object<PolicyFile>>,
        errors: &[de::Error],
        unknown: &[de::Unknown],
    ) -> Result<Policy, ConfigIssue> {
        let broken = errors
            .iter()
            .filter(|e| e.field() == "policy" || e.field().starts_with("policy."))
            .find_map(|e| Some((e.at.as_ref()?.position, e.issue(file))));
        let unknown = unknown.iter().find(|u| u.parent() == "policy").map(|u| {
            let issue = ConfigIssue::error(format!(
                "unknown field; expected {}",
                super::settings::one_of(u.expected)
            ))
            .in_file(file)
            .at(u.position)
            .field(u.field.clone());
            (u.position, issue)
        });
        let first = [broken, unknown]
            .into_iter()
            .flatten()
            .min_by_key(|(at, _)| *at);
        if let Some((_, issue)) = first {
            return Err(issue);
        }
        let Checked::Ok(Object(written)) = read else {
            return Ok(Policy::default());
        };
        let rules = |list: &RuleList, field: &str| -> Result<Vec<PolicyRule>, ConfigIssue> {
            list.0
                .iter()
                .enumerate()
                .map(|(i, rule)| {
                    rule_of(&rule.value).ok_or_else(|| {
                        ConfigIssue::error(
                            "expected {\"name\": …}, {\"command\": [...]} or {\"url\": …}",
                        )
                        .in_file(file)
                        .at(rule.at)
                        .field(format!("{field}[{i}]"))
                    })
                })
                .collect()
        };
        Ok(Policy {
            allow: written
                .allow
                .as_ref()
                .map(|list| rules(list, "policy.allow"))
                .transpose()?,
            deny: match &written.deny {
                Some(list) => rules(list, "policy.deny")?,
                None => Vec::new(),
            },
            exclusive: written.exclusive.is_some_and(|flag| flag.0),
            broken: false,
        })
    }

    /// Whether an entry may start. Managed entries and in-process servers are not subject to it.
    pub fn verdict(&self, config: &ServerConfig) -> PolicyVerdict {
        if config.origin.scope == Scope::Managed || matches!(config.transport, Transport::Sdk) {
            return PolicyVerdict::Allowed;
        }
        if self.broken {
            return PolicyVerdict::Denied(
                "the managed configuration could not be read, so only managed servers may start"
                    .to_owned(),
            );
        }
        if self.exclusive {
            return PolicyVerdict::Denied(
                "managed policy is exclusive: only managed servers may start".to_owned(),
            );
        }
        if let Some(rule) = self.deny.iter().find(|r| matches(r, config)) {
            return PolicyVerdict::Denied(format!("denied by managed policy ({rule})"));
        }
        let Some(allow) = &self.allow else {
            return PolicyVerdict::Allowed;
        };
        let is_local = matches!(config.transport, Transport::Stdio(_));
        let has_command_rules = allow.iter().any(|r| matches!(r, PolicyRule::Command(_)));
        let has_url_rules = allow.iter().any(|r| matches!(r, PolicyRule::Url(_)));
        let allowed = allow.iter().any(|rule| match rule {
            PolicyRule::Name(_) if is_local && has_command_rules => false,
            PolicyRule::Name(_) if !is_local && has_url_rules => false,
            _ => matches(rule, config),
        });
        if allowed {
            PolicyVerdict::Allowed
        } else {
            PolicyVerdict::Denied("not on the managed allow-list".to_owned())
        }
    }
}

/// `policy` as written. A new key is one field here.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct PolicyFile {
    #[serde(default, deserialize_with = "present")]
    allow: Option<RuleList>,
    #[serde(default, deserialize_with = "present")]
    deny: Option<RuleList>,
    #[serde(default, deserialize_with = "present")]
    exclusive: Option<Flag>,
}

/// A key that is written has a value, `null` included (which is then the wrong kind).
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// A list of rules, each checked with its position.
#[derive(Debug, Clone, Default)]
struct RuleList(Vec<Located<serde_json::Value>>);

impl<'de> Deserialize<'de> for RuleList {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de::expect(d, &["an array"], "an array of rules").map(RuleList)
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Flag(bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de::expect(d, &["a boolean"], "true or false").map(Flag)
    }
}

/// One rule: an object with exactly one of `name`, `command` (a non-empty list of strings) or
/// `url`.
fn rule_of(value: &serde_json::Value) -> Option<PolicyRule> {
    use serde_json::Value;
    let Value::Object(obj) = value else {
        return None;
    };
    let (key, value) = match obj.iter().collect::<Vec<_>>()[..] {
        [(key, value)] => (key.as_str(), value),
        _ => return None,
    };
    match (key, value) {
        ("name", Value::String(name)) => Some(PolicyRule::Name(name.clone())),
        ("url", Value::String(url)) => Some(PolicyRule::Url(url.clone())),
        ("command", Value::Array(parts)) if !parts.is_empty() => parts
            .iter()
            .map(|p| p.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .map(PolicyRule::Command),
        _ => None,
    }
}

fn matches(rule: &PolicyRule, config: &ServerConfig) -> bool {
    match rule {
        PolicyRule::Name(pattern) => WildMatch::new(pattern).matches(config.name.as_str()),
        PolicyRule::Command(argv) => match &config.transport {
            Transport::Stdio(s) => argv.first() == Some(&s.command) && argv[1..] == s.args[..],
            _ => false,
        },
        PolicyRule::Url(pattern) => {
            let url = match &config.transport {
                Transport::Http(r) | Transport::Sse(r) | Transport::WebSocket(r) => r.url.as_str(),
                Transport::SseIde(i) | Transport::WsIde(i) => i.url.as_str(),
                Transport::Proxy(p) => p.url.as_str(),
                Transport::Stdio(_) | Transport::Sdk => return false,
            };
            let wild = WildMatch::new(pattern);
            // `Url` adds a trailing slash to a bare origin; match what the user wrote too.
            wild.matches(url) || wild.matches(url.trim_end_matches('/'))
        }
    }
}
