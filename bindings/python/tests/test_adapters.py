"""The adapters, driven by their frameworks' own tool interfaces (no model): LangChain's
`ainvoke`/`invoke`, the Agents SDK server's `list_tools`/`call_tool`, a Pydantic AI agent run by
its scripted `TestModel`."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import ToolMessage

from switchboard import SyncHost
from switchboard.agents import server
from switchboard.langchain import tools, tools_sync

from conftest import SETTLE, kit, started


async def test_langchain_tools_share_one_session(testkit, scratch):
    async with await started({"kit": kit(testkit)}, scratch, allow=["mcp__kit"]) as host:
        by_name = {t.name: t for t in await tools(host)}
        echo = by_name["mcp__kit__echo"]
        assert echo.description == "Returns its text unchanged."
        assert echo.args["text"]["type"] == "string"

        assert await echo.ainvoke({"text": "hello"}) == "hello"
        pid = by_name["mcp__kit__pid"]
        pids = {await pid.ainvoke({}) for _ in range(10)}
        assert pids == {str(host.process_id("kit"))}, "one session for every call"

        # As a model's tool call: a ToolMessage, the whole result as its artifact.
        message = await by_name["mcp__kit__add"].ainvoke(
            {"name": "mcp__kit__add", "args": {"a": 2, "b": 3}, "id": "call-1", "type": "tool_call"}
        )
        assert isinstance(message, ToolMessage)
        assert message.tool_call_id == "call-1"
        assert message.artifact.structured == {"sum": 5}

        # A tool error reaches the model as the tool's answer.
        failed = await by_name["mcp__kit__fail"].ainvoke(
            {"name": "mcp__kit__fail", "args": {"message": "broken"}, "id": "call-2", "type": "tool_call"}
        )
        assert failed.status == "error" and "broken" in failed.content


async def test_langchain_tool_answers_a_denial(testkit, scratch):
    async with await started({"kit": kit(testkit)}, scratch, allow=["mcp__kit__echo"]) as host:
        slow = next(t for t in await tools(host) if t.name == "mcp__kit__slow")
        answer = await slow.ainvoke({"ms": 1})
        assert answer.startswith("`mcp__kit__slow` needs approval"), answer


def test_langchain_tools_of_a_sync_host_invoke(testkit, scratch):
    with SyncHost.start([{"kit": kit(testkit)}], allow=["mcp__kit"], **scratch) as host:
        assert host.wait_settled(SETTLE).settled
        echo = next(t for t in tools_sync(host) if t.name == "mcp__kit__echo")
        assert echo.invoke({"text": "sync"}) == "sync"


async def test_agents_server_lists_and_calls(testkit, everything, scratch):
    servers = {"kit": kit(testkit), "everything": {"command": everything, "args": ["stdio"]}}
    async with await started(servers, scratch, allow=["mcp__kit", "mcp__everything"]) as host:
        catalogue = server(host)
        await catalogue.connect()
        listed = {t.name: t for t in await catalogue.list_tools()}
        assert {"mcp__kit__echo", "mcp__everything__echo"} <= set(listed)
        # By the wire's names: the `mcp` package names the fields `readOnlyHint` in 1.x and
        # `read_only_hint` in 2.x (langchain-mcp-adapters, beside, wants 1.x).
        echo = listed["mcp__kit__echo"].model_dump(by_alias=True)
        assert echo["annotations"]["readOnlyHint"] is True, echo
        add = listed["mcp__kit__add"].model_dump(by_alias=True)
        assert add["outputSchema"]["required"] == ["sum"], add

        result = await catalogue.call_tool("mcp__everything__echo", {"message": "from agents"})
        assert not result.is_error
        assert "from agents" in result.content[0].text
        pid = host.process_id("everything")
        for _ in range(3):
            await catalogue.call_tool("mcp__kit__echo", {"text": "x"})
            await catalogue.call_tool("mcp__everything__echo", {"message": "y"})
        assert host.process_id("everything") == pid

        added = await catalogue.call_tool("mcp__kit__add", {"a": 1, "b": 1})
        assert added.structured_content == {"sum": 2}

        missing = await catalogue.call_tool("mcp__kit__nothing", {})
        assert missing.is_error and "no tool named" in missing.content[0].text
        await catalogue.cleanup()
        assert host.servers()[0].state == "connected", "cleanup leaves the host to its owner"


async def test_pydantic_ai_toolset_runs_an_agents_tool_calls(testkit, scratch):
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel

    from switchboard.pydantic_ai import toolset

    async with await started({"kit": kit(testkit)}, scratch, allow=["mcp__kit__echo", "mcp__kit__add"]) as host:
        tools = toolset(host)
        # Pydantic AI's scripted model calls the tools it is told to, with arguments made from
        # their schemas, and answers with what they returned (JSON).
        agent = Agent(TestModel(call_tools=["mcp__kit__echo", "mcp__kit__add"]), toolsets=[tools])
        pid = host.process_id("kit")
        for _ in range(3):
            result = await agent.run("go")
            answers = json.loads(result.output)
            assert answers["mcp__kit__echo"] == "a", answers
            assert answers["mcp__kit__add"] == {"sum": 0}, answers
        assert host.process_id("kit") == pid, "one session for every call"

        # A denied call goes back to the model as a retry prompt naming the denial.
        denied = Agent(TestModel(call_tools=["mcp__kit__slow"]), toolsets=[tools], retries=0)
        with pytest.raises(Exception) as raised:
            await denied.run("go")
        assert "needs approval" in repr(raised.value.__cause__ or raised.value), raised.value
