#!/usr/bin/env python3
"""The `ceiling` target of scripts/bench-peers.sh: a Streamable HTTP MCP endpoint that does
nothing, so the TypeScript client's calls/s against it is the most any gateway (with any server
behind it) can reach with that client on this machine.

    python3 scripts/bench-ceiling.py --port PORT

Stateless and standard library only: HTTP/1.1 keep-alive, every POST answered as one
`application/json` body (initialize, tools/list with one tool `echo`, tools/call of `echo` as
server-everything answers it: `Echo: <message>`), a notification with 202, GET with 405 (no
stream) and DELETE with 200. Prints `listening on 127.0.0.1:PORT` once it listens.
"""
import argparse
import asyncio
import json

ECHO = {
    "name": "echo",
    "description": "Echoes back the input",
    "inputSchema": {
        "type": "object",
        "properties": {"message": {"type": "string"}},
        "required": ["message"],
    },
}


def answer(message):
    """The JSON-RPC answer to one request, or None for a notification."""
    if "id" not in message or "method" not in message:
        return None
    method = message["method"]
    params = message.get("params") or {}
    if method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "bench-ceiling", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": [ECHO]}
    elif method == "tools/call" and params.get("name") == "echo":
        text = "Echo: " + str((params.get("arguments") or {}).get("message", ""))
        result = {"content": [{"type": "text", "text": text}]}
    elif method == "ping":
        result = {}
    else:
        error = {"code": -32601, "message": f"no method {method}"}
        return {"jsonrpc": "2.0", "id": message["id"], "error": error}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def response(status, body=b"", content_type=None):
    head = [f"HTTP/1.1 {status}", f"content-length: {len(body)}"]
    if content_type:
        head.append(f"content-type: {content_type}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def serve(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.split(b"\r\n")
            verb = lines[0].split(b" ", 1)[0]
            length = 0
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            body = await reader.readexactly(length) if length else b""
            if verb == b"POST":
                out = answer(json.loads(body))
                if out is None:
                    writer.write(response("202 Accepted"))
                else:
                    data = json.dumps(out, separators=(",", ":")).encode()
                    writer.write(response("200 OK", data, "application/json"))
            elif verb == b"DELETE":
                writer.write(response("200 OK"))
            else:
                writer.write(response("405 Method Not Allowed"))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = await asyncio.start_server(serve, "127.0.0.1", args.port)
    port = server.sockets[0].getsockname()[1]
    print(f"listening on 127.0.0.1:{port}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
