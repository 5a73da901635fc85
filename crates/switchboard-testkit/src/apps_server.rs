//! An MCP Apps server written with the official Python SDK's `mcp.server.apps`:
//! `fixtures/apps/apps_server.py`, over stdio. Its tools: `show_clock` (its UI
//! `ui://clock/app.html`, under `_meta.ui.resourceUri` and the older `ui/resourceUri`), `tick`
//! (for the app only: `_meta.ui.visibility: ["app"]`) and `client_extensions` (what the client
//! declared in `capabilities.extensions`, as JSON); its resource `ui://clock/app.html`
//! ([`CLOCK_HTML`], `text/html;profile=mcp-app`, a CSP and permissions in its `_meta.ui`).

use std::path::Path;

use serde_json::{Value, json};

/// The HTML of the server's `ui://clock/app.html`.
pub const CLOCK_HTML: &str = "<!doctype html><html><body><h1 id=clock>clock app</h1></body></html>";

/// The server's configuration entry: `python` (the Python whose environment has the `mcp`
/// package, `$SWITCHBOARD_PYTHON`) running the fixture.
pub fn entry(python: &str) -> Value {
    json!({"command": python, "args": [script()]})
}

/// The fixture's path.
pub fn script() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/apps/apps_server.py")
        .display()
        .to_string()
}
