"""An MCP Apps server written with the official Python SDK's `mcp.server.apps` (PyPI `mcp`,
pinned by scripts/install-partners.sh), over stdio, for the MCP Apps tests.

- `show_clock`: a tool for the model and the app, its UI `ui://clock/app.html` (under
  `_meta.ui.resourceUri` and the older `_meta["ui/resourceUri"]`);
- `tick`: a tool for the app only (`_meta.ui.visibility: ["app"]`);
- `ui://clock/app.html`: the HTML, served as `text/html;profile=mcp-app` with a CSP and the
  permissions it asks for in its `_meta.ui`.
"""

from mcp.server.apps import Apps, ResourceCsp, ResourcePermissions
from mcp.server.mcpserver import MCPServer

CLOCK_HTML = "<!doctype html><html><body><h1 id=clock>clock app</h1></body></html>"

apps = Apps()


# Also under the older flat key, as SDKs that emit both keys do.
@apps.tool(
    resource_uri="ui://clock/app.html",
    meta={"ui/resourceUri": "ui://clock/app.html"},
    description="Shows a clock",
)
def show_clock() -> str:
    return "12:00"


@apps.tool(resource_uri="ui://clock/app.html", visibility=["app"], description="Ticks the clock")
def tick() -> str:
    return "ticked"


apps.add_html_resource(
    "ui://clock/app.html",
    CLOCK_HTML,
    csp=ResourceCsp(connect_domains=["https://api.example.com"]),
    permissions=ResourcePermissions(clipboard_write={}),
    prefers_border=True,
)

server = MCPServer("clock-apps", extensions=[apps])

if __name__ == "__main__":
    server.run()
