"""LangChain tools over a :class:`~switchboard.Host` (the ``langchain`` extra:
``pip install './bindings/python[langchain]'``).

Each tool of the catalogue becomes a LangChain ``StructuredTool`` whose call goes through the
host: one long-lived session per server, shared by every tool and every call (not a session
per call), with the host's permissions, callbacks, time limits and output budget::

    from switchboard import Host
    from switchboard.langchain import tools

    async with Host.start(config=["mcp.json"], allow=["mcp__github"]) as host:
        await host.wait_settled(30)
        github = await tools(host)
        agent = create_agent(model, github)

A call that fails (denied, timed out) or a tool that reports an error raises LangChain's
``ToolException`` with the error's text; the tools handle it (``handle_tool_error``) by
answering that text, so the model sees what went wrong. The content is the result's text; the
whole :class:`~switchboard.CallResult` is the tool message's artifact.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple, Union

try:
    from langchain_core.tools import BaseTool, StructuredTool, ToolException
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "switchboard.langchain needs langchain-core: pip install './bindings/python[langchain]'"
    ) from error

from ._errors import CallError
from ._host import Host
from ._sync import SyncHost
from ._types import CallResult, Tool

__all__ = ["tools", "tools_sync", "to_langchain"]


async def tools(host: Host, names: Optional[List[str]] = None) -> List[BaseTool]:
    """The host's tools (all, or those of ``names``) as LangChain tools, called with
    ``ainvoke`` (the host is asynchronous)."""
    return [to_langchain(host, t) for t in await host.tools() if names is None or t.name in names]


def tools_sync(host: SyncHost, names: Optional[List[str]] = None) -> List[BaseTool]:
    """:func:`tools` for a :class:`~switchboard.SyncHost`: the tools answer ``invoke`` too."""
    return [to_langchain(host, t) for t in host.tools() if names is None or t.name in names]


def _outcome(call: Any) -> Tuple[str, CallResult]:
    if call.is_error:
        raise ToolException(call.text)
    return call.text, call


def to_langchain(host: Union[Host, SyncHost], tool: Tool) -> BaseTool:
    """One catalogue tool as a LangChain ``StructuredTool`` (its name is the qualified name,
    its arguments' schema the tool's input schema)."""

    metadata = {
        "server": tool.server,
        "tool_name": tool.tool_name,
        "read_only": tool.annotations.read_only,
        "destructive": tool.annotations.destructive,
    }
    common: dict = dict(
        name=tool.name,
        description=tool.description or tool.title or tool.name,
        args_schema=tool.input_schema or {"type": "object", "properties": {}},
        response_format="content_and_artifact",
        handle_tool_error=True,
        metadata=metadata,
    )
    if isinstance(host, SyncHost):

        def run(**arguments: Any) -> Tuple[str, CallResult]:
            try:
                return _outcome(host.call(tool.name, arguments))
            except CallError as error:
                raise ToolException(str(error)) from error

        return StructuredTool(func=run, **common)

    async def arun(**arguments: Any) -> Tuple[str, CallResult]:
        try:
            return _outcome(await host.call(tool.name, arguments))
        except CallError as error:
            raise ToolException(str(error)) from error

    return StructuredTool(coroutine=arun, **common)
