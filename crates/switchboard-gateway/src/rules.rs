//! Which tools a client is served: `--allow-tool` / `--deny-tool` rules (and the user file's
//! `gateway.allowTools` / `gateway.denyTools`), for everyone or for one identity.
//!
//! A rule is `PATTERN` (everyone), `scope:NAME=PATTERN` (requests whose token has the scope
//! NAME) or `sub:ID=PATTERN` (requests whose token's subject is ID). PATTERN is a glob (`*`,
//! `?`) over a tool's names: it matches when it matches the tool's qualified name
//! (`mcp__<server>__<tool>`) or the name the gateway serves it under (`--prefix`).
//!
//! For a request of some identity: a deny rule that applies to it and matches wins; if any
//! allow rule applies to it, only the tools one of them matches are served; with no rule
//! every tool is. A request with no identity (the static bearer token, stdio) gets only the
//! rules for everyone.
//!
//! The same answer hides a tool from `tools/list` (and from `search_tools`'s hits) and refuses
//! its call exactly as an unknown tool's: a client cannot tell a hidden tool from one that
//! does not exist.

use wildmatch::WildMatch;

use crate::oauth::Identity;

/// Who a rule is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Who {
    Everyone,
    /// Requests whose token has this scope.
    Scope(String),
    /// Requests whose token's subject is this.
    Subject(String),
}

/// One `--allow-tool` or `--deny-tool` rule.
#[derive(Debug, Clone)]
pub(crate) struct ToolRule {
    who: Who,
    pattern: WildMatch,
    /// As written (the audit log names a rule that refused a call).
    text: String,
}

impl ToolRule {
    /// `PATTERN`, `scope:NAME=PATTERN` or `sub:ID=PATTERN`.
    pub(crate) fn parse(text: &str) -> Result<ToolRule, String> {
        let text = text.trim();
        let scoped = |rest: &str, what: &str| -> Result<(String, String), String> {
            // A pattern has no `=` (tool names cannot); a subject may.
            match rest.rsplit_once('=') {
                Some((name, pattern)) if !name.is_empty() && !pattern.is_empty() => {
                    Ok((name.to_owned(), pattern.to_owned()))
                }
                _ => Err(format!(
                    "`{text}`: write `{what}:NAME=PATTERN` (PATTERN a tool-name glob)"
                )),
            }
        };
        let (who, pattern) = if let Some(rest) = text.strip_prefix("scope:") {
            let (name, pattern) = scoped(rest, "scope")?;
            // RFC 6749 §3.3: a scope token is printable ASCII but `"` and `\`.
            if !name
                .chars()
                .all(|c| ('!'..='~').contains(&c) && !matches!(c, '"' | '\\'))
            {
                return Err(format!(
                    "`{text}`: a scope is printable ASCII without spaces, `\"` or `\\`"
                ));
            }
            (Who::Scope(name), pattern)
        } else if let Some(rest) = text.strip_prefix("sub:") {
            let (id, pattern) = scoped(rest, "sub")?;
            (Who::Subject(id), pattern)
        } else if text.is_empty() || text.contains(['=', ':']) {
            return Err(format!(
                "`{text}`: write a tool-name glob, `scope:NAME=PATTERN` or `sub:ID=PATTERN`"
            ));
        } else {
            (Who::Everyone, text.to_owned())
        };
        Ok(ToolRule {
            who,
            pattern: WildMatch::new(&pattern),
            text: text.to_owned(),
        })
    }

    #[cfg(test)]
    fn who(&self) -> &Who {
        &self.who
    }

    fn applies(&self, identity: Option<&Identity>) -> bool {
        match (&self.who, identity) {
            (Who::Everyone, _) => true,
            (Who::Scope(scope), Some(identity)) => identity.has_scope(scope),
            (Who::Subject(subject), Some(identity)) => identity.subject == *subject,
            _ => false,
        }
    }

    fn matches(&self, qualified: &str, served: &str) -> bool {
        self.pattern.matches(qualified) || (served != qualified && self.pattern.matches(served))
    }
}

/// Which tools are served, to whom: the allow and deny rules ([module docs](self)).
#[derive(Debug, Clone, Default)]
pub struct ToolFilter {
    allow: Vec<ToolRule>,
    deny: Vec<ToolRule>,
}

impl ToolFilter {
    /// Rules for everyone from plain patterns: `allow` empty serves every tool; `deny` wins
    /// over `allow`. Patterns use `*` and `?`.
    pub fn new(allow: &[String], deny: &[String]) -> Self {
        let plain = |p: &String| ToolRule {
            who: Who::Everyone,
            pattern: WildMatch::new(p),
            text: p.clone(),
        };
        ToolFilter {
            allow: allow.iter().map(plain).collect(),
            deny: deny.iter().map(plain).collect(),
        }
    }

    /// Rules as `--allow-tool` / `--deny-tool` take them ([`ToolRule::parse`]); the error
    /// names the rule.
    pub fn parse<A, D>(allow: A, deny: D) -> Result<Self, String>
    where
        A: IntoIterator,
        A::Item: AsRef<str>,
        D: IntoIterator,
        D::Item: AsRef<str>,
    {
        let parse = |items: Vec<String>| -> Result<Vec<ToolRule>, String> {
            items.iter().map(|t| ToolRule::parse(t)).collect()
        };
        Ok(ToolFilter {
            allow: parse(allow.into_iter().map(|t| t.as_ref().to_owned()).collect())?,
            deny: parse(deny.into_iter().map(|t| t.as_ref().to_owned()).collect())?,
        })
    }

    /// Adds `other`'s rules to these.
    pub fn extend(&mut self, other: ToolFilter) {
        self.allow.extend(other.allow);
        self.deny.extend(other.deny);
    }

    /// The scopes the rules name, sorted, each once.
    pub fn scopes(&self) -> Vec<String> {
        let mut scopes: Vec<String> = self
            .allow
            .iter()
            .chain(&self.deny)
            .filter_map(|r| match &r.who {
                Who::Scope(scope) => Some(scope.clone()),
                _ => None,
            })
            .collect();
        scopes.sort();
        scopes.dedup();
        scopes
    }

    /// Whether the tool `qualified`, served as `served`, is served to a request of `identity`.
    pub fn serves_to(&self, identity: Option<&Identity>, qualified: &str, served: &str) -> bool {
        self.refusal(identity, qualified, served).is_none()
    }

    /// Why the tool `qualified`, served as `served`, is not served to a request of `identity`
    /// (`None`: it is): the deny rule that matches it (`deny-tool RULE`), or that the allow
    /// rules for it match none (`allow-tool (no rule matches)`).
    pub(crate) fn refusal(
        &self,
        identity: Option<&Identity>,
        qualified: &str,
        served: &str,
    ) -> Option<String> {
        if let Some(rule) = self
            .deny
            .iter()
            .find(|r| r.applies(identity) && r.matches(qualified, served))
        {
            return Some(format!("deny-tool {}", rule.text));
        }
        let mut allows = self.allow.iter().filter(|r| r.applies(identity)).peekable();
        if allows.peek().is_none() || allows.any(|r| r.matches(qualified, served)) {
            None
        } else {
            Some("allow-tool (no rule matches)".to_owned())
        }
    }

    /// Whether the tool `qualified` is served to a request with no identity.
    pub fn serves(&self, qualified: &str) -> bool {
        self.serves_to(None, qualified, qualified)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(subject: &str, scopes: &[&str]) -> Identity {
        Identity::new(subject, scopes.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn deny_wins_and_an_empty_allow_list_serves_everything() {
        let all = ToolFilter::new(&[], &["mcp__fs__write*".to_owned()]);
        assert!(all.serves("mcp__fs__read"));
        assert!(!all.serves("mcp__fs__write_file"));
        let some = ToolFilter::new(&["mcp__fs__*".to_owned()], &[]);
        assert!(some.serves("mcp__fs__read"));
        assert!(!some.serves("mcp__git__log"));
    }

    #[test]
    fn rules_parse_with_their_audience_or_say_what_is_wrong() {
        let rule = ToolRule::parse("scope:read=mcp__github__get_*").unwrap();
        assert_eq!(rule.who(), &Who::Scope("read".to_owned()));
        let rule = ToolRule::parse("sub:user=42=mcp__*").unwrap();
        assert_eq!(rule.who(), &Who::Subject("user=42".to_owned()));
        assert_eq!(ToolRule::parse("mcp__x__*").unwrap().who(), &Who::Everyone);
        for bad in [
            "scope:read",
            "scope:=x",
            "sub:alice=",
            "role:x=y",
            "",
            "scope:a b=x",
            "scope:a\"b=x",
        ] {
            let e = ToolRule::parse(bad).unwrap_err();
            assert!(e.contains(&format!("`{bad}`")), "{e}");
        }
    }

    #[test]
    fn rules_apply_by_scope_and_subject_and_an_applying_allow_narrows() {
        let filter = ToolFilter::parse(
            ["scope:read=mcp__github__get_*", "sub:admin=*"],
            ["mcp__shell__*", "scope:guest=*_issue"],
        )
        .unwrap();
        let reader = identity("alice", &["read"]);
        let admin = identity("admin", &[]);
        let nobody = identity("bob", &["other"]);
        let guest = identity("carol", &["read", "guest"]);
        let serves = |who: Option<&Identity>, name: &str| filter.serves_to(who, name, name);
        // An allow rule applies to the reader: only its tools.
        assert!(serves(Some(&reader), "mcp__github__get_issue"));
        assert!(!serves(Some(&reader), "mcp__github__create_issue"));
        // The admin's own allow rule covers everything but what everyone is denied.
        assert!(serves(Some(&admin), "mcp__github__create_issue"));
        assert!(!serves(Some(&admin), "mcp__shell__run"));
        // No allow rule applies: everything not denied.
        assert!(serves(Some(&nobody), "mcp__github__create_issue"));
        assert!(serves(None, "mcp__fs__read"));
        assert!(!serves(None, "mcp__shell__run"));
        // A deny of one of its scopes wins over an allow of another.
        assert!(!serves(Some(&guest), "mcp__github__get_issue"));
        assert!(serves(Some(&guest), "mcp__github__get_repo"));
        assert_eq!(filter.scopes(), ["guest", "read"]);
    }

    #[test]
    fn a_pattern_matches_the_served_name_too() {
        let filter = ToolFilter::parse(["scope:read=get_*"], Vec::<String>::new()).unwrap();
        let reader = identity("alice", &["read"]);
        assert!(filter.serves_to(Some(&reader), "mcp__github__get_issue", "get_issue"));
        assert!(!filter.serves_to(
            Some(&reader),
            "mcp__github__get_issue",
            "mcp__github__get_issue"
        ));
    }
}
