"""The host as an OpenAI Agents SDK MCP server (the ``agents`` extra:
``pip install './bindings/python[agents]'``).

:func:`server` gives the whole catalogue as one ``agents.mcp.MCPServer``: its tools are the
catalogue's (qualified names, ``mcp__<server>__<tool>``), and each call goes through the host,
so the agent gets what the SDK's own MCP clients lack: one long-lived session per server, the
servers' questions answered by the host's callbacks (elicitation, sampling), permission rules,
reconnection, lazy start, output budgets::

    from agents import Agent
    from switchboard import Host
    from switchboard.agents import server

    async with Host.start(config=["mcp.json"], on_elicitation=ask_user) as host:
        agent = Agent(name="helper", mcp_servers=[server(host)])

A call that fails (denied, timed out, no such tool) is answered as a tool error
(``isError``) whose text is the error chain, as the gateway answers it, so the model sees it.
The host is the caller's: ``connect`` waits for its servers to settle, ``cleanup`` does not
close it.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

try:
    from agents.mcp import MCPServer
    from mcp import types
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "switchboard.agents needs openai-agents: pip install './bindings/python[agents]'"
    ) from error

from ._errors import CallError, HostError
from ._host import Host

__all__ = ["server", "SwitchboardServer"]


def server(host: Host, name: str = "switchboard", settle: float = 30.0, **options: Any) -> "SwitchboardServer":
    """The host's catalogue as one Agents SDK MCP server named ``name``. ``options`` are
    ``MCPServer``'s (``require_approval``, ``use_structured_content``, …)."""
    return SwitchboardServer(host, name=name, settle=settle, **options)


class SwitchboardServer(MCPServer):
    """An ``agents.mcp.MCPServer`` whose requests a :class:`~switchboard.Host` serves."""

    def __init__(self, host: Host, name: str = "switchboard", settle: float = 30.0, **options: Any):
        super().__init__(**options)
        self._host = host
        self._name = name
        self._settle = settle
        self._tools: Optional[List[types.Tool]] = None

    @property
    def name(self) -> str:
        return self._name

    async def connect(self) -> None:
        """Waits (at most ``settle`` seconds) until the host's servers are settled."""
        await self._host.wait_settled(self._settle)

    async def cleanup(self) -> None:
        """Nothing: the host belongs to the caller, who closes it."""

    async def list_tools(self, run_context: Any = None, agent: Any = None) -> List[types.Tool]:
        listed = []
        for tool in await self._host.tools():
            definition: Dict[str, Any] = {
                "name": tool.name,
                "description": tool.description,
                "inputSchema": tool.input_schema or {"type": "object", "properties": {}},
                "annotations": {
                    "title": tool.title,
                    "readOnlyHint": tool.annotations.read_only,
                    "destructiveHint": tool.annotations.destructive,
                    "idempotentHint": tool.annotations.idempotent,
                    "openWorldHint": tool.annotations.open_world,
                },
            }
            if tool.title:
                definition["title"] = tool.title
            if tool.output_schema:
                definition["outputSchema"] = tool.output_schema
            listed.append(types.Tool.model_validate(definition))
        self._tools = listed
        return listed

    @property
    def cached_tools(self) -> Optional[List[types.Tool]]:
        return self._tools

    async def call_tool(
        self,
        tool_name: str,
        arguments: Optional[Dict[str, Any]],
        meta: Optional[Dict[str, Any]] = None,
    ) -> types.CallToolResult:
        try:
            result = await self._host.call(tool_name, arguments or {})
        except CallError as error:
            return types.CallToolResult.model_validate(
                {"content": [{"type": "text", "text": str(error)}], "isError": True}
            )
        return types.CallToolResult.model_validate(result.raw)

    async def list_prompts(self) -> types.ListPromptsResult:
        prompts = await self._host.prompts()
        return types.ListPromptsResult.model_validate(
            {"prompts": [dict(p.raw, name=p.name) for p in prompts]}
        )

    async def get_prompt(
        self, name: str, arguments: Optional[Dict[str, Any]] = None
    ) -> types.GetPromptResult:
        result = await self._host.prompt(name, arguments or {})
        return types.GetPromptResult.model_validate(result.raw)

    async def list_resources(self, cursor: Optional[str] = None) -> types.ListResourcesResult:
        resources = await self._host.resources()
        # One catalogue of every server: a resource is named by its server and URI.
        return types.ListResourcesResult.model_validate(
            {"resources": [dict(r.raw, _meta={"switchboard/server": r.server}) for r in resources]}
        )

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        for resource in await self._host.resources():
            if resource.uri == uri:
                read = await self._host.read(resource.server, uri)
                return types.ReadResourceResult.model_validate(read.raw)
        raise HostError(f"no server offers the resource `{uri}`")
