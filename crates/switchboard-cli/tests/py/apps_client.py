"""A Python-SDK client (PyPI `mcp`, pinned by scripts/install-partners.sh) for the MCP Apps
tests: connects twice to `switchboard serve --stdio` (each connection its own gateway), once
declaring MCP Apps (`io.modelcontextprotocol/ui` for `text/html;profile=mcp-app`, as a host
that renders apps does) and once not, and prints what each saw as one JSON object on stdout.

    python apps_client.py auto|legacy COMMAND [ARGS...]

`auto` is the SDK's default (`server/discover`, then 2026-07-28: the client's capabilities go
with each request); `legacy` is the `initialize` handshake. For each connection: the server's
declared extensions, every tool's name and `_meta`, the resources' URIs and `_meta`, and, for
the first tool whose `_meta.ui.resourceUri` names a UI, that resource read (URI, MIME type,
`_meta`, text); and what calling the app-only tool `tick` by its served name answered.
"""

import json
import sys

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.extension import advertise

APPS = advertise("io.modelcontextprotocol/ui", {"mimeTypes": ["text/html;profile=mcp-app"]})


def text_of(result):
    return "".join(c.text for c in result.content if getattr(c, "type", None) == "text")


def dump(model):
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


async def seen_by(mode, command, args, extensions):
    server = StdioServerParameters(command=command, args=args)
    async with Client(server, mode=mode, extensions=extensions, cache=None) as client:
        capabilities = dump(client.server_capabilities)
        tools = (await client.list_tools()).tools
        resources = (await client.list_resources()).resources
        ui = next(
            (t.meta["ui"]["resourceUri"] for t in tools if (t.meta or {}).get("ui", {}).get("resourceUri")),
            None,
        )
        read = None
        if ui is not None:
            result = await client.read_resource(ui)
            read = [dump(c) for c in result.contents]
        tick = next((t.name for t in tools if t.name.endswith("tick")), None)
        called = text_of(await client.call_tool(tick, {})) if tick else None
        return {
            "extensions": capabilities.get("extensions"),
            "tools": {t.name: t.meta for t in tools},
            "resources": {str(r.uri): r.meta for r in resources},
            "ui": ui,
            "read": read,
            "tick": called,
        }


async def main():
    mode, command, *args = sys.argv[1:]
    declaring = await seen_by(mode, command, args, [APPS])
    plain = await seen_by(mode, command, args, None)
    print(json.dumps({"declaring": declaring, "plain": plain}))


anyio.run(main)
