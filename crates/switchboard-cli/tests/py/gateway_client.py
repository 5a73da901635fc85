"""A Python-SDK client (PyPI `mcp`, pinned by scripts/install-partners.sh) for the gateway
tests: connects to `switchboard serve --stdio`, goes through every kind of request a client
makes, and prints what it saw as one JSON object on stdout.

    python gateway_client.py auto|legacy COMMAND [ARGS...]

`auto` is the SDK's default: `server/discover`, then 2026-07-28 (the server's questions come
back as input rounds); `legacy` is the `initialize` handshake (they come as requests). The
upstream behind the gateway is `testkit-server --ask-tools --big-resource N`, named `kit`.
"""

import json
import sys

import anyio
from mcp import Client, StdioServerParameters
from mcp import types

asked = []


async def elicit(context, params):
    asked.append("elicitation")
    return types.ElicitResult(action="accept", content={"name": "python", "age": 30})


async def sample(context, params):
    asked.append("sampling")
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="sampled by python"),
        model="test-model",
        stop_reason="endTurn",
    )


def text_of(result):
    return "".join(c.text for c in result.content if getattr(c, "type", None) == "text")


async def main():
    mode, command, *args = sys.argv[1:]
    progress = []

    async def on_progress(value, total, message):
        progress.append(value)

    server = StdioServerParameters(command=command, args=args)
    async with Client(
        server,
        mode=mode,
        elicitation_callback=elicit,
        sampling_callback=sample,
        client_info=types.Implementation(name="python-sdk-gateway-test", version="1.0.0"),
        cache=None,
    ) as client:
        tools = await client.list_tools()
        echo = await client.call_tool("mcp__kit__echo", {"text": "from the Python SDK"})
        form = await client.call_tool("mcp__kit__ask_form", {})
        sampled = await client.call_tool("mcp__kit__ask_sample", {"prompt": "hello"})
        slow = await client.call_tool(
            "mcp__kit__slow", {"ms": 300, "steps": 3}, progress_callback=on_progress
        )
        resources = await client.list_resources()
        big = next(r.uri for r in resources.resources if str(r.uri).endswith("test://big"))
        read = await client.read_resource(str(big))
        prompt = await client.get_prompt("mcp__kit__greet")
        print(
            json.dumps(
                {
                    "protocol": client.protocol_version,
                    "tools": [t.name for t in tools.tools],
                    "echo": text_of(echo),
                    "form": form.structured_content,
                    "sampled": text_of(sampled),
                    "slow": text_of(slow),
                    "progress": progress,
                    "read": [str(c.uri) for c in read.contents],
                    "readLength": sum(len(getattr(c, "text", "") or "") for c in read.contents),
                    "prompt": prompt.messages[0].content.text,
                    "asked": asked,
                }
            )
        )


anyio.run(main)
