"""The recipes of docs/guide/python.md for a separate process: `switchboard serve --stdio`
as one MCP server, from langchain-mcp-adapters, the OpenAI Agents SDK and Pydantic AI, each
through its own client (no model). Each keeps one session: the test server's `pid` tool
answers the same process id on every call."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Dict, List, Tuple

import pytest


@pytest.fixture
def gateway(tmp_path: Path, testkit: str, switchboard_bin: str) -> Tuple[str, List[str], Dict[str, str]]:
    """The command, arguments and environment of `switchboard serve --stdio` over a user file
    with the test server `kit`, its tools allowed; nothing of the machine's is read."""
    config = tmp_path / "config"
    config.mkdir()
    (config / "mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {"kit": {"command": testkit, "args": []}},
                "permissions": {"allow": ["mcp__kit"]},
            }
        )
    )
    env = {
        "HOME": str(tmp_path),
        "PATH": os.environ.get("PATH", ""),
        "SWITCHBOARD_CONFIG_DIR": str(config),
        "SWITCHBOARD_STATE_DIR": str(tmp_path / "state"),
        "SWITCHBOARD_MANAGED_CONFIG": str(tmp_path / "managed.json"),
    }
    return switchboard_bin, ["serve", "--stdio", "--wait-for-servers"], env


def _text(answer) -> str:
    """The text of a LangChain tool's answer: a string, or content blocks."""
    if isinstance(answer, str):
        return answer
    return "".join(block["text"] for block in answer if block.get("type") == "text")


async def test_langchain_mcp_adapters_through_serve_stdio(gateway):
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_mcp_adapters.tools import load_mcp_tools

    command, args, env = gateway
    client = MultiServerMCPClient(
        {"switchboard": {"command": command, "args": args, "env": env, "transport": "stdio"}}
    )
    # One session for every call: `client.get_tools()` would open one per call.
    async with client.session("switchboard") as session:
        tools = {t.name: t for t in await load_mcp_tools(session)}
        assert "mcp__kit__echo" in tools, sorted(tools)
        answer = await tools["mcp__kit__echo"].ainvoke({"text": "through the gateway"})
        assert _text(answer) == "through the gateway", answer
        pids = {_text(await tools["mcp__kit__pid"].ainvoke({})) for _ in range(3)}
        assert len(pids) == 1 and pids.pop().isdigit(), pids


async def test_openai_agents_sdk_through_serve_stdio(gateway):
    from agents.mcp import MCPServerStdio

    command, args, env = gateway
    params = {"command": command, "args": args, "env": env}
    async with MCPServerStdio(params=params, cache_tools_list=True, client_session_timeout_seconds=30) as server:
        names = [t.name for t in await server.list_tools()]
        assert "mcp__kit__echo" in names, names
        result = await server.call_tool("mcp__kit__echo", {"text": "agents"})
        assert result.content[0].text == "agents"
        pids = set()
        for _ in range(3):
            result = await server.call_tool("mcp__kit__pid", {})
            pids.add(result.content[0].text)
        assert len(pids) == 1 and pids.pop().isdigit(), pids


async def test_pydantic_ai_through_serve_stdio(gateway):
    from fastmcp.client import Client
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai.mcp import MCPToolset

    command, args, env = gateway
    toolset = MCPToolset(Client(StdioTransport(command, args, env=env)))
    async with toolset:
        names = [t.name for t in await toolset.list_tools()]
        assert "mcp__kit__echo" in names, names
        assert await toolset.direct_call_tool("mcp__kit__echo", {"text": "pydantic"}) == "pydantic"
        pids = {str(await toolset.direct_call_tool("mcp__kit__pid", {})) for _ in range(3)}
        assert len(pids) == 1 and pids.pop().isdigit(), pids
