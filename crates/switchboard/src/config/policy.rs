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

use jsonc_parser::ast;
use wildmatch::WildMatch;

use super::json::{Document, get, kind_name, prop_name, range_of, to_json};
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

    pub(crate) fn parse(doc: &Document, value: &ast::Value<'_>) -> Result<Policy, ConfigIssue> {
        let issue = |offset: usize, field: &str, message: String| {
            ConfigIssue::error(message)
                .in_file(&doc.path)
                .at(doc.position(offset))
                .field(field.to_owned())
        };
        let ast::Value::Object(obj) = value else {
            return Err(issue(
                range_of(value).start,
                "policy",
                format!("expected an object, found {}", kind_name(value)),
            ));
        };
        let mut policy = Policy::default();
        for prop in &obj.properties {
            match (prop_name(prop), &prop.value) {
                ("exclusive", ast::Value::BooleanLit(b)) => policy.exclusive = b.value,
                ("allow", v) => policy.allow = Some(rules(doc, v, "policy.allow", &issue)?),
                ("deny", v) => policy.deny = rules(doc, v, "policy.deny", &issue)?,
                ("exclusive", v) => {
                    return Err(issue(
                        range_of(v).start,
                        "policy.exclusive",
                        format!("expected true or false, found {}", kind_name(v)),
                    ));
                }
                (other, _) => {
                    return Err(issue(
                        prop.range.start,
                        &format!("policy.{other}"),
                        "unknown field; expected `allow`, `deny` or `exclusive`".to_owned(),
                    ));
                }
            }
        }
        Ok(policy)
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

fn rules(
    doc: &Document,
    value: &ast::Value<'_>,
    field: &str,
    issue: &dyn Fn(usize, &str, String) -> ConfigIssue,
) -> Result<Vec<PolicyRule>, ConfigIssue> {
    let _ = doc;
    let ast::Value::Array(items) = value else {
        return Err(issue(
            range_of(value).start,
            field,
            format!("expected an array of rules, found {}", kind_name(value)),
        ));
    };
    items
        .elements
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let field = format!("{field}[{i}]");
            let bad = || {
                issue(
                    range_of(item).start,
                    &field,
                    "expected {\"name\": …}, {\"command\": [...]} or {\"url\": …}".to_owned(),
                )
            };
            let ast::Value::Object(obj) = item else {
                return Err(bad());
            };
            if obj.properties.len() != 1 {
                return Err(bad());
            }
            match (get(obj, "name"), get(obj, "command"), get(obj, "url")) {
                (Some(p), _, _) => match &p.value {
                    ast::Value::StringLit(s) => Ok(PolicyRule::Name(s.value.to_string())),
                    _ => Err(bad()),
                },
                (_, Some(p), _) => match to_json(&p.value) {
                    serde_json::Value::Array(parts)
                        if !parts.is_empty() && parts.iter().all(|v| v.is_string()) =>
                    {
                        Ok(PolicyRule::Command(
                            parts
                                .iter()
                                .filter_map(|v| v.as_str().map(str::to_owned))
                                .collect(),
                        ))
                    }
                    _ => Err(bad()),
                },
                (_, _, Some(p)) => match &p.value {
                    ast::Value::StringLit(s) => Ok(PolicyRule::Url(s.value.to_string())),
                    _ => Err(bad()),
                },
                _ => Err(bad()),
            }
        })
        .collect()
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
