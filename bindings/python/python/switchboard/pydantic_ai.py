"""The host as a Pydantic AI toolset (the ``pydantic-ai`` extra:
``pip install './bindings/python[pydantic-ai]'``).

:func:`toolset` gives the whole catalogue as one ``pydantic_ai`` toolset: its tools are the
catalogue's (qualified names, ``mcp__<server>__<tool>``, with the servers' JSON schemas), and
each call goes through the host: one long-lived session per server, the servers' questions
answered by the host's callbacks, permission rules, reconnection, lazy start, output budgets::

    from pydantic_ai import Agent
    from switchboard import Host
    from switchboard.pydantic_ai import toolset

    async with Host.start(config=["mcp.json"], on_elicitation=ask_user) as host:
        agent = Agent("openai:gpt-5", toolsets=[toolset(host)])

A result is its structured content when the tool gives one, else its text. A tool error or a
failed call (denied, timed out) goes back to the model as a retry prompt carrying its text, as
Pydantic AI's own MCP toolset does by default. Entering the toolset waits for the host's servers
to settle; leaving it does not close the host, which belongs to the caller.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

try:
    import pydantic_core
    from pydantic_ai.exceptions import ModelRetry
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.toolsets import AbstractToolset
    from pydantic_ai.toolsets.abstract import ToolsetTool
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "switchboard.pydantic_ai needs pydantic-ai: pip install './bindings/python[pydantic-ai]'"
    ) from error

from ._errors import CallError
from ._host import Host

__all__ = ["toolset", "SwitchboardToolset"]

# Arguments are checked by the server against its own schema: here only that they are an object.
_ARGUMENTS = pydantic_core.SchemaValidator(
    schema=pydantic_core.core_schema.dict_schema(
        pydantic_core.core_schema.str_schema(), pydantic_core.core_schema.any_schema()
    )
)


def toolset(
    host: Host, id: str = "switchboard", settle: float = 30.0, max_retries: Optional[int] = None
) -> "SwitchboardToolset":
    """The host's catalogue as one Pydantic AI toolset. ``max_retries``: how often the model
    may retry a failed call (the agent's own setting when ``None``)."""
    return SwitchboardToolset(host, id=id, settle=settle, max_retries=max_retries)


class SwitchboardToolset(AbstractToolset[Any]):
    """A ``pydantic_ai`` toolset whose tools a :class:`~switchboard.Host` serves."""

    def __init__(
        self,
        host: Host,
        id: str = "switchboard",
        settle: float = 30.0,
        max_retries: Optional[int] = None,
    ):
        self._host = host
        self._id = id
        self._settle = settle
        self._max_retries = max_retries

    @property
    def id(self) -> Optional[str]:
        return self._id

    async def __aenter__(self) -> "SwitchboardToolset":
        """Waits (at most ``settle`` seconds) until the host's servers are settled."""
        await self._host.wait_settled(self._settle)
        return self

    async def __aexit__(self, *args: Any) -> Optional[bool]:
        """Nothing: the host belongs to the caller, who closes it."""
        return None

    async def get_tools(self, ctx: Any) -> Dict[str, ToolsetTool[Any]]:
        retries = self._max_retries if self._max_retries is not None else ctx.max_retries
        tools: Dict[str, ToolsetTool[Any]] = {}
        for tool in await self._host.tools():
            definition = ToolDefinition(
                name=tool.name,
                description=tool.description,
                parameters_json_schema=tool.input_schema or {"type": "object", "properties": {}},
            )
            tools[tool.name] = ToolsetTool(
                toolset=self,
                tool_def=definition,
                max_retries=retries,
                args_validator=_ARGUMENTS,
            )
        return tools

    async def call_tool(self, name: str, tool_args: Dict[str, Any], ctx: Any, tool: Any) -> Any:
        try:
            result = await self._host.call(name, tool_args)
        except CallError as error:
            raise ModelRetry(str(error)) from error
        if result.is_error:
            raise ModelRetry(result.text)
        return result.structured if result.structured is not None else result.text
