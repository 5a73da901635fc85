"""The asynchronous Host against the testkit server and server-everything."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List

import pytest

import switchboard
from switchboard import CallError, Deny, Host, HostError, Progress

from conftest import SETTLE, kit, started


async def test_lists_the_tools_with_their_schemas_and_annotations(testkit, scratch):
    async with await started({"kit": kit(testkit)}, scratch) as host:
        tools = {t.name: t for t in await host.tools()}
        echo = tools["mcp__kit__echo"]
        assert echo.server == "kit"
        assert echo.tool_name == "echo"
        assert echo.description == "Returns its text unchanged."
        assert echo.input_schema["required"] == ["text"]
        assert echo.annotations.read_only and not echo.annotations.open_world
        add = tools["mcp__kit__add"]
        assert add.output_schema["required"] == ["sum"]
        assert [s.name for s in host.servers()] == ["kit"]
        assert host.servers()[0].state == "connected"
        assert host.servers()[0].pid == host.process_id("kit") is not None


async def test_calls_go_over_one_session(testkit, scratch):
    async with await started({"kit": kit(testkit)}, scratch, allow=["mcp__kit"]) as host:
        pids = {(await host.call("mcp__kit__pid")).text.strip() for _ in range(20)}
        assert pids == {str(host.process_id("kit"))}, "one process, one session, for 20 calls"

        echoed = await host.call("mcp__kit__echo", {"text": "hello"})
        assert echoed.text == "hello"
        assert echoed.content == [{"type": "text", "text": "hello"}]
        assert not echoed.is_error

        added = await host.call("mcp__kit__add", {"a": 1, "b": 2})
        assert added.structured == {"sum": 3}

        failed = await host.call("mcp__kit__fail", {"message": "broken"})
        assert failed.is_error
        assert "broken" in failed.text


async def test_everything_lists_and_calls_over_one_process(everything, scratch):
    servers = {"everything": {"command": everything, "args": ["stdio"]}}
    async with await started(servers, scratch, allow=["mcp__everything"]) as host:
        names = [t.name for t in await host.tools()]
        assert "mcp__everything__echo" in names
        pid = host.process_id("everything")
        for i in range(5):
            result = await host.call("mcp__everything__echo", {"message": f"hello {i}"})
            assert f"hello {i}" in result.text
        assert host.process_id("everything") == pid

        updates: List[Progress] = []
        long = await host.call(
            "mcp__everything__trigger-long-running-operation",
            {"duration": 1, "steps": 4},
            on_progress=updates.append,
        )
        assert "completed" in long.text.lower(), long.raw
        assert len(updates) == 4, updates
        assert [u.progress for u in updates] == sorted(u.progress for u in updates)


async def test_progress_reaches_the_callback_before_the_call_returns(testkit, scratch):
    async with await started({"kit": kit(testkit)}, scratch, allow=["mcp__kit"]) as host:
        seen: List[Progress] = []
        result = await host.call("mcp__kit__slow", {"ms": 300, "steps": 3}, on_progress=seen.append)
        assert result.text == "done"
        assert [p.progress for p in seen] == [1, 2, 3]
        assert all(p.total == 3 for p in seen), seen


async def test_a_question_is_answered_by_the_callback(testkit, scratch):
    asked: List[switchboard.ElicitationRequest] = []

    async def fill_in(request: switchboard.ElicitationRequest) -> Dict[str, Any]:
        asked.append(request)
        return {"name": "Ada", "age": 36}

    async with await started(
        {"kit": kit(testkit, "--ask-tools")},
        scratch,
        allow=["mcp__kit"],
        on_elicitation=fill_in,
        on_sampling=lambda request: "four, said the model",
    ) as host:
        form = await host.call("mcp__kit__ask_form")
        assert not form.is_error, form.raw
        assert form.structured == {"name": "Ada", "age": 36}
        assert [(r.server, r.tool, r.mode) for r in asked] == [("kit", "mcp__kit__ask_form", "form")]
        assert asked[0].message == "Tell us about yourself"
        assert "name" in asked[0].requested_schema["properties"]

        sampled = await host.call("mcp__kit__ask_sample", {"prompt": "2 + 2?"})
        assert sampled.text == "the model said: four, said the model"


async def test_a_callback_that_raises_declines(testkit, scratch):
    def refuse(request):
        raise RuntimeError("no one is here")

    async with await started(
        {"kit": kit(testkit, "--ask-tools")},
        scratch,
        allow=["mcp__kit"],
        on_elicitation=refuse,
    ) as host:
        form = await host.call("mcp__kit__ask_form")
        assert form.text == "declined"


async def test_an_elicitation_from_everything_is_answered(everything, scratch):
    servers = {"everything": {"command": everything, "args": ["stdio"]}}

    def fill_in(request):
        fields = request.requested_schema["properties"]
        return {name: _value_for(field) for name, field in fields.items()}

    async with await started(
        servers, scratch, allow=["mcp__everything"], on_elicitation=fill_in
    ) as host:
        result = await host.call("mcp__everything__trigger-elicitation-request")
        assert not result.is_error and "accept" in result.text, result.raw


def _value_for(field: Dict[str, Any]) -> Any:
    """A value a form's field takes: its default, its first choice, or one of its type."""
    if "default" in field:
        return field["default"]
    choices = field.get("enum") or [
        c["const"] for key in ("oneOf", "anyOf") for c in field.get(key, []) if "const" in c
    ]
    if choices:
        return choices[0]
    kind = field.get("type")
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        return field.get("minimum", 1)
    if kind == "array":
        return [_value_for(field.get("items", {"type": "string"}))]
    formats = {"email": "py@example.com", "uri": "https://example.com/", "date": "2026-01-01"}
    return formats.get(field.get("format"), "an answer from Python")


async def test_a_denied_call_raises_the_typed_error(testkit, scratch):
    async with await started({"kit": kit(testkit)}, scratch) as host:
        # No rule allows it and nobody is asked: denied.
        with pytest.raises(CallError) as denied:
            await host.call("mcp__kit__echo", {"text": "x"})
        assert denied.value.is_denied
        assert denied.value.server == "kit"
        assert not denied.value.is_timeout and not denied.value.needs_auth
        assert "mcp__kit__echo" in str(denied.value)


async def test_the_permission_callback_decides(testkit, scratch):
    asked: List[switchboard.PermissionRequest] = []

    def decide(request: switchboard.PermissionRequest):
        asked.append(request)
        return True if request.read_only else Deny("only read-only tools today")

    async with await started({"kit": kit(testkit)}, scratch, on_permission=decide) as host:
        assert (await host.call("mcp__kit__echo", {"text": "yes"})).text == "yes"
        with pytest.raises(CallError) as denied:
            await host.call("mcp__kit__fail")
        assert denied.value.is_denied
        assert "only read-only tools today" in str(denied.value)
        assert [(r.tool, r.server, r.name, r.read_only) for r in asked] == [
            ("mcp__kit__echo", "kit", "echo", True),
            ("mcp__kit__fail", "kit", "fail", False),
        ]
        assert asked[0].arguments == {"text": "yes"}


async def test_errors_keep_the_library_answers(testkit, scratch):
    async with await started({"kit": kit(testkit)}, scratch, allow=["mcp__kit"]) as host:
        with pytest.raises(CallError) as slow:
            await host.call("mcp__kit__slow", {"ms": 20000}, timeout=0.3)
        assert slow.value.is_timeout and slow.value.server == "kit"
        # The error chain: the call, then its cause.
        assert str(slow.value).startswith("`mcp__kit__slow` on server `kit`: "), str(slow.value)

        with pytest.raises(CallError) as invalid:
            await host.call("mcp__kit__echo", {"text": 5})
        assert "invalid arguments" in str(invalid.value)
        assert not invalid.value.is_denied

        with pytest.raises(CallError) as missing:
            await host.call("mcp__kit__nothing")
        assert "no tool named `mcp__kit__nothing`" in str(missing.value)

        with pytest.raises(HostError):
            await host.read("nobody", "test://readme")


async def test_events_tell_a_server_restart(testkit, scratch):
    servers = {"crashy": kit(testkit, "--crash-after", "1", restart="on-failure")}
    async with await started(servers, scratch, allow=["mcp__crashy"]) as host:
        first = host.process_id("crashy")
        events = host.events()
        assert (await host.call("mcp__crashy__echo", {"text": "a"})).text == "a"
        with pytest.raises(CallError) as crashed:
            await host.call("mcp__crashy__echo", {"text": "b"})
        assert crashed.value.server == "crashy"

        seen = []
        while not any(e.type == "state" and e.state == "connected" for e in seen):
            event = await events.next(SETTLE)
            assert event is not None, f"no reconnect within {SETTLE}s: {seen}"
            seen.append(event)
        reconnecting = [e for e in seen if e.type == "reconnecting"]
        assert reconnecting and reconnecting[0].server == "crashy", seen
        assert "exited" in reconnecting[0].data["message"], reconnecting
        assert host.process_id("crashy") not in (None, first)
        assert (await host.call("mcp__crashy__echo", {"text": "c"})).text == "c"


async def test_events_tell_a_catalogue_change_and_end_on_close(testkit, scratch):
    host = await started({"kit": kit(testkit)}, scratch, allow=["mcp__kit"])
    events = host.events()
    await host.call("mcp__kit__add_tool", {"name": "fresh"})
    changed = None
    while changed is None:
        event = await events.next(SETTLE)
        assert event is not None, "no catalogue event"
        # (The first listing of the catalogue is announced too: every tool added.)
        if event.type == "tools_changed" and "mcp__kit__fresh" in event.data["added"]:
            changed = event
    assert changed.server == "kit" and changed.data["removed"] == []
    assert "mcp__kit__fresh" in [t.name for t in await host.tools()]
    await host.close()
    # Closed: the iterator ends once what was sent before is read.
    rest = await asyncio.wait_for(_drain(events), SETTLE)
    assert all(e.type != "tools_changed" for e in rest)


async def _drain(events) -> list:
    return [e async for e in events]


async def test_a_lazy_server_starts_on_its_first_call(testkit, scratch):
    servers = {"kit": kit(testkit, startup="lazy")}
    async with await started(servers, scratch, allow=["mcp__kit"]) as host:
        # Started once to fill its lists, then stopped.
        assert host.servers()[0].state == "lazy"
        assert host.process_id("kit") is None
        assert "mcp__kit__echo" in [t.name for t in await host.tools()]

        pid = (await host.call("mcp__kit__pid")).text.strip()
        assert host.servers()[0].state == "connected"
        assert pid == str(host.process_id("kit"))


async def test_resources_reads_and_prompts(testkit, scratch):
    servers = {"kit": kit(testkit, "--sample-resources", "--completions")}
    async with await started(servers, scratch) as host:
        resources = await host.resources()
        assert not resources.failures
        uris = [r.uri for r in resources]
        assert "test://readme" in uris and all(r.server == "kit" for r in resources)
        read = await host.read("kit", "test://readme")
        assert read.text and read.contents[0]["uri"] == "test://readme"

        prompts = await host.prompts()
        paint = next(p for p in prompts if p.prompt_name == "paint")
        assert paint.name == "mcp__kit__paint" and paint.server == "kit"
        got = await host.prompt(paint.name, {"color": "red"})
        assert "red" in str(got.messages), got.raw


async def test_search_finds_the_tool(testkit, scratch):
    async with await started({"kit": kit(testkit)}, scratch) as host:
        hits = await host.search_tools("add two numbers", limit=3)
        assert hits[0].tool.name == "mcp__kit__add", hits


async def test_start_reports_a_bad_pattern(scratch):
    with pytest.raises(switchboard.StartError) as bad:
        await Host.start(config=[{}], allow=["mcp__"], **scratch)
    assert "allow" in str(bad.value)
