"""Switchboard, the MCP host, in Python.

The whole host of the ``switchboard`` command line in the program's own process: every
server of the user's configuration (every scope, managed policy, project approvals),
connected in the background with one session each, reconnected and started lazily; one
catalogue of their tools, resources and prompts; each call through permission rules, time
limits, progress, the servers' questions (answered by callbacks) and the output budget.

- :class:`Host` — the asynchronous host (``async with Host.start(...) as host``).
- :class:`SyncHost` — the same without ``await``, for scripts and notebooks.
- :class:`CallError`, :class:`HostError`, :class:`StartError` — what failed, and why
  (``server``, ``is_timeout``, ``needs_auth``, ``is_denied``).
- ``switchboard.langchain``, ``switchboard.agents``, ``switchboard.pydantic_ai`` — the host's
  tools as LangChain tools, as an OpenAI Agents SDK MCP server and as a Pydantic AI toolset
  (the ``langchain``, ``agents`` and ``pydantic-ai`` extras).

A first call::

    import asyncio
    from switchboard import Host

    async def main():
        config = {"echo": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]}}
        async with Host.start(config=[config], allow=["mcp__echo"]) as host:
            await host.wait_settled(30)
            result = await host.call("mcp__echo__echo", {"message": "hello"})
            print(result.text)

    asyncio.run(main())
"""

from ._errors import CallError, HostError, StartError, SwitchboardError
from ._host import ConfigSource, Events, Host
from ._sync import SyncEvents, SyncHost
from ._types import (
    Annotations,
    CallResult,
    Deny,
    ElicitationRequest,
    Event,
    Listing,
    PermissionRequest,
    Progress,
    Prompt,
    PromptResult,
    ReadResult,
    Readiness,
    Resource,
    SamplingRequest,
    SearchHit,
    Server,
    Tool,
)

__all__ = [
    "Annotations",
    "CallError",
    "CallResult",
    "ConfigSource",
    "Deny",
    "ElicitationRequest",
    "Event",
    "Events",
    "Host",
    "HostError",
    "Listing",
    "PermissionRequest",
    "Progress",
    "Prompt",
    "PromptResult",
    "ReadResult",
    "Readiness",
    "Resource",
    "SamplingRequest",
    "SearchHit",
    "Server",
    "StartError",
    "SwitchboardError",
    "SyncEvents",
    "SyncHost",
    "Tool",
]
