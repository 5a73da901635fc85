//! The protocol's extensions (SEP-1724, SEP-2133): what a host declares to its servers in
//! `capabilities.extensions` ([`Extensions`]; [`HostBuilder::extension`] adds a program's own),
//! and what MCP Apps (`io.modelcontextprotocol/ui`) asks of a host: a tool whose
//! `_meta.ui.visibility` leaves out `"model"` is for its app only ([`is_app_only`]), and a
//! tool's UI is the `ui://` resource its `_meta.ui.resourceUri` names ([`ui_resource_uri`]).
//! Skills (SEP-2640, [`SKILLS`]) are declared too; a server that offers them says so in its own
//! `capabilities.extensions` ([`Capabilities::offers_skills`](crate::Capabilities::offers_skills)),
//! and [`Host::skills`](crate::Host::skills) lists them.
//!
//! [`HostBuilder::extension`]: crate::HostBuilder::extension

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// MCP Apps' identifier (the TypeScript and Python SDKs' constant).
pub const UI: &str = "io.modelcontextprotocol/ui";

/// Skills' identifier (SEP-2640): skills served over resources, listed by `skills/list`.
pub const SKILLS: &str = "io.modelcontextprotocol/skills";

/// Tasks' identifier (SEP-2663, the 2026-07-28 form of tasks): declared per request to a
/// server that declared it (see `connection/tasks.rs`), never at the handshake.
pub const TASKS: &str = "io.modelcontextprotocol/tasks";

/// The MIME type of an app's `ui://` HTML resource.
pub const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// What an app's resource URI starts with.
pub const UI_SCHEME: &str = "ui://";

/// The older, flat spelling of `_meta.ui.resourceUri` that SDKs still send beside it.
pub const FLAT_RESOURCE_URI: &str = "ui/resourceUri";

/// Extensions by identifier, each with its settings (a JSON object; an empty one declares
/// the extension without settings).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Extensions(BTreeMap<String, Map<String, Value>>);

impl Extensions {
    /// None.
    pub fn new() -> Extensions {
        Extensions::default()
    }

    /// What a host declares unless its program says otherwise: MCP Apps, for the HTML
    /// profile (`{"mimeTypes": ["text/html;profile=mcp-app"]}`, as the SDKs' clients declare
    /// it), and Skills (`{}`, as FastMCP's client declares it; the extension asks nothing of a
    /// client's declaration). A host renders nothing itself; declaring MCP Apps lets its
    /// servers send their apps' tools and resources, which the host keeps from the model
    /// ([`is_app_only`]) and its program may show.
    pub fn host_default() -> Extensions {
        let mut extensions = Extensions::new();
        extensions.insert(UI, json!({"mimeTypes": [APP_MIME_TYPE]}));
        extensions.insert(SKILLS, json!({}));
        extensions
    }

    /// Declares `id` with `settings` (an object; anything else declares it without
    /// settings), replacing what it was declared with.
    pub fn insert(&mut self, id: impl Into<String>, settings: Value) {
        let settings = match settings {
            Value::Object(settings) => settings,
            _ => Map::new(),
        };
        self.0.insert(id.into(), settings);
    }

    /// No longer declares `id`.
    pub fn remove(&mut self, id: &str) {
        self.0.remove(id);
    }

    /// The settings `id` is declared with, if it is.
    pub fn get(&self, id: &str) -> Option<&Map<String, Value>> {
        self.0.get(id)
    }

    /// Whether `id` is declared.
    pub fn contains(&self, id: &str) -> bool {
        self.0.contains_key(id)
    }

    /// Whether none is declared.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The identifiers and their settings, sorted by identifier.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Map<String, Value>)> {
        self.0.iter().map(|(id, settings)| (id.as_str(), settings))
    }

    /// The identifiers, sorted.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// The extensions as the protocol writes them (`{"<id>": {settings}}`).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| json!({}))
    }

    /// From a capabilities object's `extensions` member (members whose settings are not an
    /// object are declared without settings).
    pub fn from_json(value: Option<&Value>) -> Extensions {
        let mut extensions = Extensions::new();
        if let Some(Value::Object(map)) = value {
            for (id, settings) in map {
                extensions.insert(id.clone(), settings.clone());
            }
        }
        extensions
    }
}

impl FromIterator<(String, Map<String, Value>)> for Extensions {
    fn from_iter<I: IntoIterator<Item = (String, Map<String, Value>)>>(iter: I) -> Self {
        Extensions(iter.into_iter().collect())
    }
}

/// The `_meta.ui` object of a tool's or a resource's `_meta`.
fn ui(meta: Option<&Value>) -> Option<&Map<String, Value>> {
    meta?.get("ui")?.as_object()
}

/// Whether a tool with this `_meta` is for its app only: its `_meta.ui.visibility` is a list
/// without `"model"` (`["app"]`). A host keeps it from the model (no listing shows it) and
/// calls it for the app by name. No visibility is both (`["model", "app"]`).
pub fn is_app_only(meta: Option<&Value>) -> bool {
    ui(meta)
        .and_then(|ui| ui.get("visibility"))
        .and_then(Value::as_array)
        .is_some_and(|visibility| !visibility.iter().any(|v| v == "model"))
}

/// The `ui://` resource of a tool's UI: `_meta.ui.resourceUri`, else the older
/// `_meta["ui/resourceUri"]`.
pub fn ui_resource_uri(meta: Option<&Value>) -> Option<&str> {
    ui(meta)
        .and_then(|ui| ui.get("resourceUri"))
        .or_else(|| meta?.get(FLAT_RESOURCE_URI))
        .and_then(Value::as_str)
}

/// Whether these extensions (a client's) declare MCP Apps for HTML: `io.modelcontextprotocol/ui`
/// with `text/html;profile=mcp-app` among its `mimeTypes`, as the Python SDK's
/// `client_supports_apps` and the TypeScript SDK's servers ask.
pub fn renders_apps(extensions: &Extensions) -> bool {
    extensions
        .get(UI)
        .and_then(|settings| settings.get("mimeTypes"))
        .and_then(Value::as_array)
        .is_some_and(|types| types.iter().any(|t| t == APP_MIME_TYPE))
}

/// Whether `uri` is an app's resource (`ui://…`; the scheme in any case, RFC 3986).
pub fn is_ui_uri(uri: &str) -> bool {
    uri.get(..UI_SCHEME.len())
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case(UI_SCHEME))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_only_is_a_visibility_without_the_model() {
        assert!(is_app_only(Some(&json!({"ui": {"visibility": ["app"]}}))));
        assert!(!is_app_only(Some(
            &json!({"ui": {"visibility": ["model", "app"]}})
        )));
        assert!(!is_app_only(Some(
            &json!({"ui": {"resourceUri": "ui://a"}})
        )));
        assert!(!is_app_only(None));
    }

    #[test]
    fn the_resource_uri_is_read_under_either_key() {
        let both = json!({"ui": {"resourceUri": "ui://a/new"}, "ui/resourceUri": "ui://a/old"});
        assert_eq!(ui_resource_uri(Some(&both)), Some("ui://a/new"));
        let flat = json!({"ui/resourceUri": "ui://a/old"});
        assert_eq!(ui_resource_uri(Some(&flat)), Some("ui://a/old"));
        assert!(is_ui_uri("UI://x/y") && !is_ui_uri("file:///x"));
    }

    #[test]
    fn extensions_read_and_write_the_protocol_shape() {
        let host = Extensions::host_default();
        assert_eq!(
            host.to_json(),
            json!({UI: {"mimeTypes": ["text/html;profile=mcp-app"]}, SKILLS: {}})
        );
        let read = Extensions::from_json(Some(&json!({UI: {}, "x.y/z": true})));
        assert_eq!(read.ids().collect::<Vec<_>>(), vec![UI, "x.y/z"]);
        assert!(read.get("x.y/z").is_some_and(Map::is_empty));
        assert!(renders_apps(&host) && !renders_apps(&read));
    }
}
