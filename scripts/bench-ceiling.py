#!/usr/bin/env python3
"""The `ceiling` target of scripts/bench-peers.sh: a Streamable HTTP MCP endpoint with no
server behind it, so the TypeScript client's calls/s against it is about the most a gateway
can reach with that client on this machine. It is not free: its own CPU a call (one Python
thread, 80-220 µs here by load) is printed as the gateway's, and a gateway that spent less
could go a little past it.

    python3 scripts/bench-ceiling.py --port PORT

Stateless, standard library only, one thread on a selector: HTTP/1.1 keep-alive, every POST
answered as one `application/json` body (initialize, tools/list with one tool `echo`,
tools/call of `echo` as server-everything answers it: `Echo: <message>`), a notification with
202, GET with 405 (no stream) and DELETE with 200. Prints `listening on 127.0.0.1:PORT` once it listens.
"""
import argparse
import json
import selectors
import socket

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


def handle(verb, body):
    """The response to one whole request: its method and its body."""
    if verb == b"POST":
        out = answer(json.loads(body))
        if out is None:
            return response("202 Accepted")
        data = json.dumps(out, separators=(",", ":")).encode()
        return response("200 OK", data, "application/json")
    if verb == b"DELETE":
        return response("200 OK")
    return response("405 Method Not Allowed")


def whole(buffer):
    """The first whole request in `buffer` as (method, body, its length in the buffer), or None
    while it is not all there."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = buffer[:end].split(b"\r\n")
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    total = end + 4 + length
    if len(buffer) < total:
        return None
    return lines[0].split(b" ", 1)[0], buffer[end + 4 : total], total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    # One thread, non-blocking sockets and a selector: the least work a request can cost here.
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.port))
    listener.listen(128)
    listener.setblocking(False)
    print(f"listening on 127.0.0.1:{listener.getsockname()[1]}", flush=True)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    buffers = {}
    while True:
        for key, _ in selector.select():
            sock = key.fileobj
            if sock is listener:
                conn, _ = listener.accept()
                conn.setblocking(False)
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                selector.register(conn, selectors.EVENT_READ)
                buffers[conn] = b""
                continue
            try:
                data = sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except ConnectionError:
                data = b""
            if not data:
                selector.unregister(sock)
                del buffers[sock]
                sock.close()
                continue
            buffer = buffers[sock] + data
            out = b""
            while (request := whole(buffer)) is not None:
                verb, body, total = request
                out += handle(verb, body)
                buffer = buffer[total:]
            buffers[sock] = buffer
            if out:
                # Answers are small: the socket's buffer takes them whole.
                sock.setblocking(True)
                sock.sendall(out)
                sock.setblocking(False)


if __name__ == "__main__":
    main()
