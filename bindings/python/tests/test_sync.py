"""The synchronous facade, SyncHost: the same host without await."""

from __future__ import annotations

import pytest

from switchboard import CallError, SyncHost

from conftest import SETTLE, kit


def test_a_script_lists_calls_and_sees_events(testkit, scratch):
    answers = []

    def fill_in(request):
        answers.append(request.message)
        return {"name": "Grace", "age": 85}

    with SyncHost.start(
        [{"kit": kit(testkit, "--ask-tools")}],
        allow=["mcp__kit"],
        on_elicitation=fill_in,
        **scratch,
    ) as host:
        assert host.wait_settled(SETTLE).settled
        assert "mcp__kit__echo" in [t.name for t in host.tools()]
        pid = host.process_id("kit")
        for i in range(5):
            assert host.call("mcp__kit__echo", {"text": f"hi {i}"}).text == f"hi {i}"
        assert host.call("mcp__kit__pid").text.strip() == str(pid)

        seen = []
        assert host.call("mcp__kit__slow", {"ms": 100, "steps": 2}, on_progress=seen.append).text == "done"
        assert [p.progress for p in seen] == [1, 2]

        assert host.call("mcp__kit__ask_form").structured == {"name": "Grace", "age": 85}
        assert answers == ["Tell us about yourself"]

        events = host.events()
        host.reconnect("kit")
        states = []
        while "connected" not in states:
            event = events.next(SETTLE)
            assert event is not None, f"no state event within {SETTLE}s: {states}"
            if event.type == "state":
                states.append(event.state)
        assert host.process_id("kit") not in (None, pid)

        with pytest.raises(CallError) as timed_out:
            host.call("mcp__kit__slow", {"ms": 20000}, timeout=0.2)
        assert timed_out.value.is_timeout
    # Closed: nothing more comes, and closing again does nothing.
    assert events.next(0.1) is None
    host.close()
