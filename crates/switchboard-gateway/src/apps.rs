//! MCP Apps (`io.modelcontextprotocol/ui`) through the gateway, in one place (agentgateway
//! keeps it in one module too, `mcp/apps.rs`): which extensions a client is answered with, an
//! upstream's `ui://` URIs served as `ui://<server>/<rest>` (a `ui://` URI stays `ui://`, in
//! every `--prefix` mode, so a host still renders it), and `_meta.ui` kept for a client that
//! declared the extension, taken off (with the app-only tools) for one that did not.

use rmcp::model::{ClientCapabilities, ExtensionCapabilities, TASKS_EXTENSION_ID};
use serde_json::Value;
use switchboard::ServerState;
use switchboard::extensions::{self, Extensions, FLAT_RESOURCE_URI, UI_SCHEME};
use switchboard::host::Host;

/// What a client declared, as far as MCP Apps goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Apps {
    /// It declared the extension for HTML ([`extensions::renders_apps`]): it gets the app-only
    /// tools and every `_meta.ui`, with `ui://` URIs the gateway routes back.
    Rendered,
    /// It did not: no app-only tool, no `_meta.ui`.
    Hidden,
}

impl Apps {
    /// What the client of a request declared (per request in 2026-07-28, at `initialize`
    /// before; rmcp's `client_capabilities` answers both).
    pub(crate) fn of(capabilities: Option<&ClientCapabilities>) -> Apps {
        if capabilities.is_some_and(|c| extensions::renders_apps(&client_extensions(c))) {
            Apps::Rendered
        } else {
            Apps::Hidden
        }
    }

    /// Whether a tool with this `_meta` is served to the client.
    pub(crate) fn shows(self, tool: &switchboard::Tool) -> bool {
        self == Apps::Rendered || !tool.is_app_only()
    }
}

/// A client's declared extensions, in the library's terms.
fn client_extensions(capabilities: &ClientCapabilities) -> Extensions {
    capabilities
        .extensions
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// The extensions the gateway passes on: those whose requests and results it knows how to
/// serve again: MCP Apps, and skills (`skills/list` and `skills/get` answered from every
/// server's, [`crate::skills`]). Tasks are the gateway's own ([`crate::tasks`]); an embedder's
/// own extension means nothing to the gateway's clients.
const PASSED_ON: &[&str] = &[extensions::UI, extensions::SKILLS];

/// The extensions the gateway answers a client with: those an upstream server among `servers`
/// (the host's states) declared (the first by server name gives the settings) that the
/// gateway passes on ([`PASSED_ON`]) and the host speaks (it declared them to the servers,
/// [`Host::extensions`]), and, when the client's capabilities are known, that the client
/// declared. `None` when there are none.
pub(crate) fn answered(
    host: &Host,
    servers: &[(String, ServerState)],
    client: Option<&ClientCapabilities>,
) -> Option<ExtensionCapabilities> {
    let spoken = host.extensions();
    let client = client.map(client_extensions);
    let mut shared = ExtensionCapabilities::new();
    for (_, state) in servers {
        let ServerState::Connected(info) = state else {
            continue;
        };
        for (id, settings) in info.capabilities.extensions.iter() {
            if PASSED_ON.contains(&id)
                && spoken.contains(id)
                && client.as_ref().is_none_or(|c| c.contains(id))
                && !shared.contains_key(id)
            {
                // Skills' settings say only whether `resources/directory/read` is served,
                // which the gateway does not route: none.
                let settings = if id == extensions::SKILLS {
                    Default::default()
                } else {
                    settings.clone()
                };
                shared.insert(id.to_owned(), settings);
            }
        }
    }
    // Tasks are the gateway's own to pass through: declared where an upstream makes them
    // (the 2025-11-25 in-core form, which the host speaks) and the client declared them.
    let tasks = servers
        .iter()
        .any(|(_, state)| matches!(state, ServerState::Connected(info) if takes_tasks(info)));
    let mut shared = Some(shared).filter(|shared| !shared.is_empty());
    if tasks
        && client
            .as_ref()
            .is_none_or(|c| c.contains(TASKS_EXTENSION_ID))
    {
        declare_tasks(&mut shared);
    }
    shared
}

/// Whether a server can run a call as a task (it speaks 2025-11-25 or later over
/// `initialize`).
fn takes_tasks(info: &switchboard::ServerInfo) -> bool {
    info.generation == switchboard::Generation::Initialize
        && info.protocol_version.as_str() >= "2025-11-25"
}

/// Adds the tasks extension to the gateway's declared extensions.
pub(crate) fn declare_tasks(extensions: &mut Option<ExtensionCapabilities>) {
    extensions
        .get_or_insert_with(ExtensionCapabilities::new)
        .insert(TASKS_EXTENSION_ID.to_owned(), Default::default());
}

/// Whether the client declared an extension the gateway passes on and the host speaks: its `initialize` waits (what
/// is left of the list wait) for servers still connecting, so that the answer names the
/// upstreams' extensions.
pub(crate) fn asks_for_any(host: &Host, client: &ClientCapabilities) -> bool {
    let client = client_extensions(client);
    client.ids().any(|id| {
        id == TASKS_EXTENSION_ID || (PASSED_ON.contains(&id) && host.extensions().contains(id))
    })
}

/// The URI an upstream's `ui://<rest>` is served under: `ui://<server>/<rest>`. `None` for
/// any other URI.
pub(crate) fn served_ui_uri(server: &str, uri: &str) -> Option<String> {
    if !extensions::is_ui_uri(uri) {
        return None;
    }
    Some(format!("{UI_SCHEME}{server}/{}", &uri[UI_SCHEME.len()..]))
}

/// `(server, the server's own URI)` of a [`served_ui_uri`]. Server names never hold `/`; the
/// caller checks that the server is one of the host's.
pub(crate) fn parse_ui_uri(uri: &str) -> Option<(&str, String)> {
    if !extensions::is_ui_uri(uri) {
        return None;
    }
    let (server, rest) = uri[UI_SCHEME.len()..].split_once('/')?;
    (!server.is_empty() && !rest.is_empty()).then(|| (server, format!("{UI_SCHEME}{rest}")))
}

/// A tool's `_meta` as served: for [`Apps::Rendered`], its UI's URI (`ui.resourceUri` and the
/// older `ui/resourceUri`) rewritten to [`served_ui_uri`]; for [`Apps::Hidden`], without
/// either (`_meta` dropped if nothing else is in it).
pub(crate) fn serve_tool_meta(server: &str, meta: &mut Option<Value>, apps: Apps) {
    let Some(Value::Object(fields)) = meta else {
        return;
    };
    match apps {
        Apps::Rendered => {
            let nested = fields
                .get_mut("ui")
                .and_then(Value::as_object_mut)
                .and_then(|ui| ui.get_mut("resourceUri"));
            rewrite(server, nested);
            rewrite(server, fields.get_mut(FLAT_RESOURCE_URI));
        }
        Apps::Hidden => {
            fields.remove("ui");
            fields.remove(FLAT_RESOURCE_URI);
            if fields.is_empty() {
                *meta = None;
            }
        }
    }
}

fn rewrite(server: &str, value: Option<&mut Value>) {
    if let Some(value) = value
        && let Some(served) = value.as_str().and_then(|uri| served_ui_uri(server, uri))
    {
        *value = Value::String(served);
    }
}

/// A resource's (listed or read) `_meta.ui` (its CSP, permissions, domain) taken off for a
/// client that did not declare MCP Apps; kept as the server sent it otherwise.
pub(crate) fn serve_resource_meta(item: &mut Value, apps: Apps) {
    if apps == Apps::Rendered {
        return;
    }
    if let Some(Value::Object(meta)) = item.get_mut("_meta") {
        meta.remove("ui");
        if meta.is_empty()
            && let Value::Object(fields) = item
        {
            fields.remove("_meta");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ui_uris_stay_ui_and_map_back() {
        let served = served_ui_uri("apps", "ui://clock/app.html").unwrap();
        assert_eq!(served, "ui://apps/clock/app.html");
        assert_eq!(
            parse_ui_uri(&served),
            Some(("apps", "ui://clock/app.html".to_owned()))
        );
        assert_eq!(served_ui_uri("apps", "file:///x"), None);
        assert_eq!(parse_ui_uri("ui://apps"), None);
        assert_eq!(parse_ui_uri("switchboard://apps/ui://x"), None);
    }

    #[test]
    fn tool_meta_is_rewritten_or_taken_off() {
        let original = json!({
            "ui": {"resourceUri": "ui://clock/app.html", "visibility": ["model", "app"]},
            "ui/resourceUri": "ui://clock/app.html",
            "other": 1,
        });
        let mut meta = Some(original.clone());
        serve_tool_meta("apps", &mut meta, Apps::Rendered);
        assert_eq!(
            meta,
            Some(json!({
                "ui": {"resourceUri": "ui://apps/clock/app.html", "visibility": ["model", "app"]},
                "ui/resourceUri": "ui://apps/clock/app.html",
                "other": 1,
            }))
        );
        let mut meta = Some(original);
        serve_tool_meta("apps", &mut meta, Apps::Hidden);
        assert_eq!(meta, Some(json!({"other": 1})));
        let mut only_ui = Some(json!({"ui": {"resourceUri": "ui://x/y"}}));
        serve_tool_meta("apps", &mut only_ui, Apps::Hidden);
        assert_eq!(only_ui, None);
    }
}
