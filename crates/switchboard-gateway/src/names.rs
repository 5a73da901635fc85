//! The names the gateway gives tools, prompts and resources, by [`Prefix`] mode
//! (agentgateway's): `always` the host's qualified names (`mcp__<server>__<tool>`,
//! `switchboard://<server>/<uri>`), `conditional` a server's own name wherever no other server
//! uses it, `never` the servers' own names, which must then be unique. An app's `ui://<rest>`
//! is `ui://<server>/<rest>` in every mode ([`crate::apps`]). They are the gateway's
//! alone: the host knows qualified names only, and everything here goes through its public
//! methods (one door).
//!
//! Permissions, hooks and `--allow-tool` patterns keep matching qualified names: a served name
//! is translated back ([`ServedNames::qualified`]) before anything else sees it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use switchboard::host::{Host, HostError, Listed, PromptEntry};
use switchboard::{QualifiedName, ServerState, Tool};

/// What a resource URI served under its server's name starts with.
pub(crate) const RESOURCE_SCHEME: &str = "switchboard://";

/// The URI a resource `uri` of `server` gets when it is served with a prefix:
/// `switchboard://<server>/<uri>`. The server's URI is kept verbatim after the first `/`, so
/// a URI template keeps its variables and a URI filled in from it maps back by the same rule.
/// An app's `ui://<rest>` stays `ui://`: `ui://<server>/<rest>` ([`crate::apps`]).
pub(crate) fn resource_uri(server: &str, uri: &str) -> String {
    crate::apps::served_ui_uri(server, uri)
        .or_else(|| crate::skills::served_skill_uri(server, uri))
        .unwrap_or_else(|| format!("{RESOURCE_SCHEME}{server}/{uri}"))
}

/// `(server, the server's URI)` of a [`resource_uri`], or `None` for any other URI. Server
/// names are `[A-Za-z0-9][A-Za-z0-9_-]*`, so they never contain `/`.
pub(crate) fn parse_resource_uri(uri: &str) -> Option<(&str, &str)> {
    let rest = uri.strip_prefix(RESOURCE_SCHEME)?;
    let (server, original) = rest.split_once('/')?;
    (!server.is_empty() && !original.is_empty()).then_some((server, original))
}

/// How served names are made (`serve --prefix`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Prefix {
    /// Every name carries its server: `mcp__<server>__<tool>`, `switchboard://<server>/<uri>`.
    #[default]
    Always,
    /// A server's own name where no other server's item has it; both prefixed where two do.
    Conditional,
    /// The servers' own names; two servers offering one name is an error
    /// ([`NameCollision`]), and neither item is served.
    Never,
}

impl std::str::FromStr for Prefix {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "always" => Ok(Prefix::Always),
            "conditional" => Ok(Prefix::Conditional),
            "never" => Ok(Prefix::Never),
            _ => Err(format!("`{text}`: use `always`, `conditional` or `never`")),
        }
    }
}

/// Two or more servers offer one name under [`Prefix::Never`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} `{name}` is offered by servers {}", servers.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(" and "))]
pub struct NameCollision {
    /// `tool`, `prompt`, `resource` or `resource template`.
    pub kind: &'static str,
    /// The name (or URI) they share.
    pub name: String,
    /// The servers that offer it, sorted.
    pub servers: Vec<String>,
}

/// Served names of one kind of item, both ways.
#[derive(Debug, Default)]
pub(crate) struct ServedNames {
    /// Qualified → served, for the items whose served name differs.
    served: HashMap<String, String>,
    /// Served → qualified, for the items whose served name differs.
    qualified: HashMap<String, String>,
    /// Qualified names of items left out (a collision under [`Prefix::Never`]).
    hidden: std::collections::HashSet<String>,
    /// The collisions found (under [`Prefix::Never`] only).
    pub collisions: Vec<NameCollision>,
}

impl ServedNames {
    /// The names of `items` (`(server, own name, qualified name)`) by `prefix`; `kind` names
    /// them in a [`NameCollision`].
    pub(crate) fn new<'a>(
        prefix: Prefix,
        kind: &'static str,
        items: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>,
    ) -> ServedNames {
        let mut names = ServedNames::default();
        if prefix == Prefix::Always {
            return names;
        }
        // Own name → (servers, qualified names).
        let mut by_own: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
        for (server, own, qualified) in items {
            by_own.entry(own).or_default().push((server, qualified));
        }
        let qualified_taken: std::collections::HashSet<&str> = by_own
            .values()
            .flat_map(|v| v.iter().map(|(_, q)| *q))
            .collect();
        for (own, offers) in &by_own {
            let mut servers: Vec<String> = offers.iter().map(|(s, _)| (*s).to_owned()).collect();
            servers.sort();
            servers.dedup();
            // One server, and no other item's qualified name is this bare name.
            let unique =
                servers.len() == 1 && (!qualified_taken.contains(own) || offers[0].1 == *own);
            match (prefix, unique) {
                (_, true) => {
                    let qualified = offers[0].1;
                    if qualified != *own {
                        names.served.insert(qualified.to_owned(), (*own).to_owned());
                        names
                            .qualified
                            .insert((*own).to_owned(), qualified.to_owned());
                    }
                }
                (Prefix::Never, false) => {
                    names
                        .hidden
                        .extend(offers.iter().map(|(_, q)| (*q).to_owned()));
                    names.collisions.push(NameCollision {
                        kind,
                        name: (*own).to_owned(),
                        servers,
                    });
                }
                _ => {}
            }
        }
        names
    }

    /// These names with every served name longer than `max` characters cut to `max` by the
    /// rule qualified names are cut by (its start, `_`, a hash of the whole name): a budget
    /// for clients that add a prefix of their own to the names (`serve --max-name-length`).
    /// `qualified`: every item's qualified name.
    pub(crate) fn within<'a>(
        mut self,
        max: usize,
        qualified: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        for q in qualified {
            let Some(served) = self.served(q) else {
                continue;
            };
            let fitted = QualifiedName::fit(served, max);
            if let std::borrow::Cow::Owned(short) = fitted {
                let old = served.to_owned();
                self.qualified.remove(&old);
                self.qualified.insert(short.clone(), q.to_owned());
                self.served.insert(q.to_owned(), short);
            }
        }
        self
    }

    /// The served name of the item with this qualified name; `None` when it is not served
    /// (a collision under [`Prefix::Never`]).
    pub(crate) fn served<'a>(&'a self, qualified: &'a str) -> Option<&'a str> {
        if self.hidden.contains(qualified) {
            return None;
        }
        Some(self.served.get(qualified).map_or(qualified, String::as_str))
    }

    /// The qualified name of the item served as `served` (a name no map knows is taken as
    /// qualified: the same under [`Prefix::Always`]).
    pub(crate) fn qualified<'a>(&'a self, served: &'a str) -> &'a str {
        self.qualified.get(served).map_or(served, String::as_str)
    }
}

/// The served names of a catalogue's tools (a [`switchboard::ToolsView`]'s).
pub(crate) fn tool_names_of<'a>(
    prefix: Prefix,
    tools: impl Iterator<Item = &'a Tool>,
) -> ServedNames {
    ServedNames::new(
        prefix,
        "tool",
        tools.filter_map(|t| {
            t.server
                .as_deref()
                .map(|s| (s, t.name.as_str(), t.qualified_name.as_str()))
        }),
    )
}

/// [`tool_names_of`], every served name at most `max` characters when `max` is given
/// ([`ServedNames::within`]).
pub(crate) fn tool_names_within<'a>(
    prefix: Prefix,
    max: Option<usize>,
    tools: impl Iterator<Item = &'a Tool> + Clone,
) -> ServedNames {
    let names = tool_names_of(prefix, tools.clone());
    match max {
        Some(max) => names.within(
            max,
            tools
                .filter(|t| t.server.is_some())
                .map(|t| t.qualified_name.as_str()),
        ),
        None => names,
    }
}

/// The served names of a listing's resources (`field` `uri`) or templates (`uriTemplate`).
pub(crate) fn resource_names(
    prefix: Prefix,
    kind: &'static str,
    field: &str,
    items: &[Listed],
) -> ServedNames {
    let qualified: Vec<(String, String, String)> = items
        .iter()
        .filter_map(|l| {
            let own = l.item.get(field)?.as_str()?;
            // An app's URI is served with its server in every mode: not a bare name.
            if switchboard::extensions::is_ui_uri(own) {
                return None;
            }
            Some((
                l.server.clone(),
                own.to_owned(),
                resource_uri(&l.server, own),
            ))
        })
        .collect();
    ServedNames::new(
        prefix,
        kind,
        qualified
            .iter()
            .map(|(s, o, q)| (s.as_str(), o.as_str(), q.as_str())),
    )
}

/// The served names of a listing's prompts.
pub(crate) fn prompt_names(prefix: Prefix, prompts: &[PromptEntry]) -> ServedNames {
    ServedNames::new(
        prefix,
        "prompt",
        prompts
            .iter()
            .map(|p| (p.server.as_str(), p.prompt.as_str(), p.name.as_str())),
    )
}

/// The tool names cached with the catalogue generation and naming they were built from.
type BuiltNames = (u64, (Prefix, Option<usize>), Arc<ServedNames>);

/// The served names of the catalogue's tools, built once per catalogue generation (a server's
/// list stored or dropped), so a call's lookup is a map's.
#[derive(Debug, Default)]
pub(crate) struct ToolNames(parking_lot::Mutex<Option<BuiltNames>>);

impl ToolNames {
    /// The served names of `host`'s tools by `prefix`, every served name at most `max`
    /// characters when `max` is given ([`ServedNames::within`]).
    pub(crate) async fn get(
        &self,
        host: &Host,
        prefix: Prefix,
        max: Option<usize>,
    ) -> Arc<ServedNames> {
        if prefix == Prefix::Always && max.is_none() {
            return Arc::default();
        }
        let generation = host.catalog_generation();
        let naming = (prefix, max);
        let cached = self
            .0
            .lock()
            .as_ref()
            .filter(|(g, n, _)| *g == generation && *n == naming)
            .map(|(_, _, n)| n.clone());
        if let Some(names) = cached {
            return names;
        }
        let view = host.tools_view().await;
        let names = Arc::new(tool_names_within(prefix, max, view.iter()));
        // A listing that failed is tried again by the next lookup, not cached without it.
        if view.complete() {
            *self.0.lock() = Some((generation, naming, names.clone()));
        }
        names
    }
}

/// Every name two servers of `host` share, where `prefix` serves them bare
/// ([`Prefix::Never`]): tools, prompts, resources and resource templates.
pub async fn name_collisions(host: &Host, prefix: Prefix) -> Vec<NameCollision> {
    if prefix != Prefix::Never {
        return Vec::new();
    }
    // The tools as `tools/list` names them: the app-only ones too (a client that renders apps
    // is served them).
    let view = host.tools_view().await;
    let mut all = tool_names_of(prefix, view.iter()).collisions;
    all.extend(prompt_names(prefix, &host.prompts(None).await.items).collisions);
    let resources = host.resources(None).await.items;
    all.extend(resource_names(prefix, "resource", "uri", &resources).collisions);
    let templates = host.resource_templates(None).await.items;
    all.extend(resource_names(prefix, "resource template", "uriTemplate", &templates).collisions);
    all
}

/// A prompt by the name `prefix` serves it under (its qualified name
/// `mcp__<server>__<prompt>`, or its own where that is served bare).
pub(crate) async fn find_served_prompt(
    host: &Host,
    prefix: Prefix,
    name: &str,
) -> Result<PromptEntry, HostError> {
    if prefix == Prefix::Always {
        return host.find_prompt(name).await;
    }
    let listing = host.prompts(None).await;
    let names = prompt_names(prefix, &listing.items);
    let qualified = names.qualified(name).to_owned();
    match listing.items.into_iter().find(|p| p.name == qualified) {
        Some(prompt) => Ok(prompt),
        None => host.find_prompt(name).await,
    }
}

/// The server and the server's own URI of a resource `uri` served by `prefix`: a
/// `switchboard://<server>/<uri>`, else the server whose resource or (filled-in) template
/// it is, else the only server that offers resources (which answers for itself).
pub(crate) async fn resolve_resource_uri(
    host: &Host,
    prefix: Prefix,
    uri: &str,
) -> Result<(String, String), HostError> {
    if let Some((server, original)) = parse_resource_uri(uri) {
        return Ok((server.to_owned(), original.to_owned()));
    }
    // `ui://<server>/<rest>`, when it names one of the host's servers (else, without prefixes,
    // it may be a server's own URI).
    if let Some((server, original)) = crate::apps::parse_ui_uri(uri)
        && host.server_config(server).is_some()
    {
        return Ok((server.to_owned(), original));
    }
    // `skill://<server>/<rest>` likewise (a server's skills and their files).
    if let Some((server, original)) = crate::skills::parse_skill_uri(uri)
        && host.server_config(server).is_some()
    {
        return Ok((server.to_owned(), original));
    }
    let not_found = || HostError::NoSuchResource(uri.to_owned());
    if prefix == Prefix::Always {
        return Err(not_found());
    }
    let resources = host.resources(None).await;
    let names = resource_names(prefix, "resource", "uri", &resources.items);
    if let Some((server, original)) = parse_resource_uri(names.qualified(uri)) {
        return Ok((server.to_owned(), original.to_owned()));
    }
    let templates = host.resource_templates(None).await;
    let mut matching: Vec<&str> = templates
        .items
        .iter()
        .filter(|l| {
            l.item
                .get("uriTemplate")
                .and_then(serde_json::Value::as_str)
                .is_some_and(|t| template_matches(t, uri))
        })
        .map(|l| l.server.as_str())
        .collect();
    matching.sort();
    matching.dedup();
    if let [server] = matching.as_slice() {
        return Ok(((*server).to_owned(), uri.to_owned()));
    }
    let offering: Vec<String> = host
        .servers()
        .into_iter()
        .filter(|(_, s)| matches!(s, ServerState::Connected(info) if info.capabilities.resources))
        .map(|(n, _)| n)
        .collect();
    match offering.as_slice() {
        [server] => Ok((server.clone(), uri.to_owned())),
        _ => Err(not_found()),
    }
}

/// Whether `uri` could have been filled in from the URI template `template` (RFC 6570,
/// loosely: each `{…}` stands for any text, the rest must match in order).
fn template_matches(template: &str, uri: &str) -> bool {
    let mut rest = uri;
    let mut parts = template.split('{');
    let Some(first) = parts.next() else {
        return false;
    };
    let Some(after) = rest.strip_prefix(first) else {
        return false;
    };
    rest = after;
    let mut literals: Vec<&str> = Vec::new();
    for part in parts {
        match part.split_once('}') {
            Some((_, literal)) => literals.push(literal),
            None => return false,
        }
    }
    for (i, literal) in literals.iter().enumerate() {
        let last = i + 1 == literals.len();
        if literal.is_empty() {
            if last {
                return true;
            }
            continue;
        }
        if last {
            return rest.ends_with(literal);
        }
        match rest.find(literal) {
            Some(at) => rest = &rest[at + literal.len()..],
            None => return false,
        }
    }
    literals.is_empty() && rest.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items() -> Vec<(&'static str, &'static str, &'static str)> {
        vec![
            ("a", "echo", "mcp__a__echo"),
            ("b", "echo", "mcp__b__echo"),
            ("a", "add", "mcp__a__add"),
            ("b", "time", "mcp__b__time"),
        ]
    }

    #[test]
    fn conditional_keeps_unique_names_and_prefixes_shared_ones() {
        let names = ServedNames::new(Prefix::Conditional, "tool", items());
        assert_eq!(names.served("mcp__a__add"), Some("add"));
        assert_eq!(names.served("mcp__b__time"), Some("time"));
        assert_eq!(names.served("mcp__a__echo"), Some("mcp__a__echo"));
        assert_eq!(names.served("mcp__b__echo"), Some("mcp__b__echo"));
        assert_eq!(names.qualified("add"), "mcp__a__add");
        assert_eq!(names.qualified("mcp__b__echo"), "mcp__b__echo");
        assert!(names.collisions.is_empty());
    }

    #[test]
    fn never_names_each_collision_and_serves_neither() {
        let names = ServedNames::new(Prefix::Never, "tool", items());
        assert_eq!(
            names.collisions,
            vec![NameCollision {
                kind: "tool",
                name: "echo".into(),
                servers: vec!["a".into(), "b".into()],
            }]
        );
        assert_eq!(names.served("mcp__a__echo"), None);
        assert_eq!(names.served("mcp__a__add"), Some("add"));
        assert_eq!(
            names.collisions[0].to_string(),
            "tool `echo` is offered by servers `a` and `b`"
        );
    }

    #[test]
    fn always_is_the_qualified_names() {
        let names = ServedNames::new(Prefix::Always, "tool", items());
        assert_eq!(names.served("mcp__a__add"), Some("mcp__a__add"));
        assert_eq!(names.qualified("mcp__a__add"), "mcp__a__add");
    }

    #[test]
    fn uris_and_templates_map_back() {
        let uri = resource_uri("everything", "demo://resource/static/document/a.md");
        assert_eq!(
            uri,
            "switchboard://everything/demo://resource/static/document/a.md"
        );
        assert_eq!(
            parse_resource_uri(&uri),
            Some(("everything", "demo://resource/static/document/a.md"))
        );
        let template = resource_uri("kit", "file:///{path}");
        let filled = template.replace("{path}", "tmp/x");
        assert_eq!(parse_resource_uri(&filled), Some(("kit", "file:///tmp/x")));
        assert_eq!(parse_resource_uri("file:///tmp/x"), None);
        assert_eq!(parse_resource_uri("switchboard://kit"), None);
    }

    #[test]
    fn templates_match_filled_uris() {
        assert!(template_matches(
            "test://template/{id}/data",
            "test://template/123/data"
        ));
        assert!(template_matches("file:///{path}", "file:///tmp/x"));
        assert!(!template_matches(
            "test://template/{id}/data",
            "test://other/123/data"
        ));
        assert!(!template_matches(
            "test://template/{id}/data",
            "test://template/123/meta"
        ));
        assert!(template_matches("a://x", "a://x"));
        assert!(!template_matches("a://x", "a://xy"));
    }
}
