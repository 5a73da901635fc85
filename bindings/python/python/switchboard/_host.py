"""The asynchronous host: :class:`Host`."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
from typing import (
    Any,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    List,
    Mapping,
    Optional,
    Sequence,
    Union,
)

from . import _callbacks, _native
from ._types import (
    CallResult,
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

__all__ = ["Host", "Events", "ConfigSource"]

ConfigSource = Union[str, "os.PathLike[str]", Mapping[str, Any]]
"""A configuration source: a path to an ``mcp.json``, the same JSON as text, or as a dict
(``{"mcpServers": {...}}``, or the servers alone: ``{"name": {"command": ...}}``)."""

Callback = Callable[[Any], Any]


def _source(source: ConfigSource) -> str:
    if isinstance(source, Mapping):
        document = dict(source)
        if "mcpServers" not in document:
            document = {"mcpServers": document}
        return json.dumps(document)
    return os.fspath(source)


class _Starting:
    """What :meth:`Host.start` returns: await it for the host, or use it as an async context
    manager (the host is closed on the way out)."""

    def __init__(self, start: Callable[[], Awaitable["Host"]]) -> None:
        self._start = start
        self._host: Optional[Host] = None

    def __await__(self) -> Generator[Any, None, "Host"]:
        return self._start().__await__()

    async def __aenter__(self) -> "Host":
        self._host = await self._start()
        return self._host

    async def __aexit__(self, *exc: Any) -> None:
        if self._host is not None:
            await self._host.close()


class Host:
    """Switchboard's MCP host: every server of the configuration connected in the background,
    one catalogue of their tools, resources and prompts, and each request run through
    permissions, time limits, progress, the servers' questions and the output budget.

    Start one with :meth:`Host.start`::

        async with Host.start(config=["mcp.json"], allow=["mcp__github"]) as host:
            await host.wait_settled(30)
            for tool in await host.tools():
                print(tool.name, tool.description)
            result = await host.call("mcp__github__list_issues", {"repo": "x/y"})
            print(result.text)

    One host keeps one session per server: every call to a server goes over the same
    connection (a stdio server is one process), reconnected when it drops.
    """

    def __init__(self, native: "_native.NativeHost") -> None:
        # Made by `Host.start`.
        self._native = native

    @classmethod
    def start(
        cls,
        config: Sequence[ConfigSource] = (),
        *,
        cwd: Optional[Union[str, "os.PathLike[str]"]] = None,
        env: Optional[Mapping[str, Optional[str]]] = None,
        isolated: bool = False,
        state_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
        allow: Sequence[str] = (),
        deny: Sequence[str] = (),
        eager: bool = False,
        on_elicitation: Optional[Callable[[ElicitationRequest], Any]] = None,
        on_permission: Optional[Callable[[PermissionRequest], Any]] = None,
        on_sampling: Optional[Callable[[SamplingRequest], Any]] = None,
    ) -> _Starting:
        """Starts a host; its servers connect in the background (see :meth:`wait_settled`).

        Use it as ``async with Host.start(...) as host:`` (closed on the way out) or
        ``host = await Host.start(...)`` (then ``await host.close()``).

        Args:
            config: The program's configuration sources, on top of the user's configuration
                of every scope (user, project ``.mcp.json``, local, managed), as
                ``switchboard --mcp-config`` takes them: paths to ``mcp.json`` files, the
                JSON as text, or dicts.
            cwd: The working directory whose project configuration is read (default: the
                process's); also the root offered to servers.
            env: Variables the configuration reads (``${VAR}``, the configuration and state
                folders), over the process's own; ``None`` as a value removes one.
            isolated: The program's ``config`` is the whole configuration: no user, project
                or managed file is read (nor their permission rules and hooks).
            state_dir: Where the host keeps what it learns of servers, OAuth tokens and
                large results (default: the configuration's state folder).
            allow: Tools allowed without asking, as an ``allow`` rule would
                (``mcp__<server>`` for a whole server, ``mcp__<server>__<tool>``, globs).
            deny: Tools denied, as a ``deny`` rule would: left out of the catalogue.
            eager: Start every server now, lazy ones included.
            on_elicitation: Answers a server's questions to the user
                (:class:`~switchboard.ElicitationRequest`); without it they are declined.
            on_permission: Asked when no rule allows a call
                (:class:`~switchboard.PermissionRequest`): answer ``True``, ``"always"``,
                ``False`` or :class:`~switchboard.Deny`. Without it such calls are denied:
                MCP tools need a rule or an answer.
            on_sampling: Answers a server's ``sampling/createMessage``
                (:class:`~switchboard.SamplingRequest`) with a text or a result dict.

        Callbacks may be plain functions or coroutine functions; they run on the event loop
        the host was started from. One that raises refuses (denies, declines, fails).

        Raises:
            StartError: A limit set in the environment is not valid, or an ``allow`` or
                ``deny`` pattern is not one.
        """

        async def start() -> Host:
            native = _native.start(
                [_source(s) for s in config],
                _callbacks.invoke,
                cwd=os.fspath(cwd) if cwd is not None else None,
                env=dict(env) if env is not None else None,
                isolated=isolated,
                state_dir=os.fspath(state_dir) if state_dir is not None else None,
                allow=list(allow),
                deny=list(deny),
                eager=eager,
                on_elicitation=on_elicitation,
                on_permission=on_permission,
                on_sampling=on_sampling,
            )
            return cls(native)

        return _Starting(start)

    @property
    def config_issues(self) -> List[str]:
        """Problems found in the configuration files, one line each."""
        return self._native.config_issues()

    async def wait_settled(self, timeout: float = 30.0) -> Readiness:
        """Waits until no server is still connecting, at most ``timeout`` seconds.

        Returns a :class:`~switchboard.Readiness`, true when every server is settled
        (connected, failed, waiting for a login, disabled or lazy).

        Raises:
            HostError: A server marked ``required`` did not connect.
        """
        return Readiness(pending=list(await self._native.wait_settled(float(timeout))))

    async def tools(self) -> Listing[Tool]:
        """Every tool of every connected (or lazy) server, as the catalogue names them.

        Problems found on the way (tools left out, descriptions cut, failed listings) are
        in the listing's ``issues``.
        """
        data = json.loads(await self._native.tools())
        return Listing([Tool._from_json(t) for t in data["tools"]], issues=data["issues"])

    async def search_tools(self, query: str, limit: int = 10) -> List[SearchHit]:
        """The ``limit`` tools most relevant to ``query`` (BM25 over names, titles,
        descriptions and parameters), best first. Lazy servers' tools are searched too."""
        hits = json.loads(await self._native.search_tools(query, int(limit)))
        return [SearchHit(Tool._from_json(h["tool"]), float(h["score"])) for h in hits]

    async def call(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Optional[float] = None,
        on_progress: Optional[Callable[[Progress], Any]] = None,
    ) -> CallResult:
        """Calls a tool by its qualified name (``mcp__<server>__<tool>``).

        A lazy or failed server is started (or reconnected) first; the arguments are checked
        against the tool's input schema; permission rules, hooks and ``on_permission``
        decide; then the call runs with the tool timeout (``timeout`` seconds overrides it)
        and its result goes through the output budget.

        Args:
            on_progress: Called with each :class:`~switchboard.Progress` notification, on
                the event loop, all before the call returns (a coroutine function is
                scheduled as a task).

        Raises:
            CallError: The call did not succeed (``is_denied``, ``is_timeout``,
                ``needs_auth``, ``server`` tell why). A tool that reports an error returns a
                result whose ``is_error`` is true instead.
        """
        progress = None
        if on_progress is not None:
            callback = on_progress

            def progress(value: float, total: Optional[float], message: Optional[str]) -> None:
                answer = callback(Progress(value, total, message))
                if inspect.isawaitable(answer):
                    asyncio.ensure_future(answer)

        outcome = await self._native.call(
            name,
            json.dumps(dict(arguments or {})),
            None if timeout is None else float(timeout),
            progress,
        )
        return CallResult._from_json(json.loads(outcome))

    async def resources(self, server: Optional[str] = None) -> Listing[Resource]:
        """The resources of every connected server (or of ``server``); servers whose
        listing failed are in the listing's ``failures``."""
        items, failures = await self._native.resources(server)
        return Listing([Resource._from_json(r) for r in json.loads(items)], failures)

    async def read(self, server: str, uri: str, *, timeout: Optional[float] = None) -> ReadResult:
        """Reads the resource ``uri`` of ``server`` (``resources/read``), through the output
        budget.

        Raises:
            HostError: No such server, not connected, or the server refused.
        """
        outcome = await self._native.read(server, uri, None if timeout is None else float(timeout))
        return ReadResult._from_json(json.loads(outcome))

    async def prompts(self, server: Optional[str] = None) -> Listing[Prompt]:
        """The prompts of every connected server (or of ``server``); servers whose listing
        failed are in the listing's ``failures``."""
        items, failures = await self._native.prompts(server)
        return Listing([Prompt._from_json(p) for p in json.loads(items)], failures)

    async def prompt(
        self,
        name: str,
        arguments: Optional[Mapping[str, str]] = None,
        *,
        timeout: Optional[float] = None,
    ) -> PromptResult:
        """Gets the prompt ``name`` (its qualified name, ``mcp__<server>__<prompt>``) with
        these arguments (``prompts/get``).

        Raises:
            HostError: No such prompt or server, or the server refused.
        """
        result = await self._native.prompt(
            name, json.dumps(dict(arguments or {})), None if timeout is None else float(timeout)
        )
        return PromptResult._from_json(json.loads(result))

    def servers(self) -> List[Server]:
        """Every configured server with its state, now."""
        return [Server._from_json(s) for s in json.loads(self._native.servers())]

    def process_id(self, server: str) -> Optional[int]:
        """The process id of a running stdio server (``None`` when it is not running)."""
        return self._native.process_id(server)

    def reconnect(self, server: str) -> None:
        """Reconnects a server (a stdio server's process is started again).

        Raises:
            HostError: No such server.
        """
        self._native.reconnect(server)

    def set_enabled(self, server: str, enabled: bool) -> None:
        """Enables or disables a server for this host (its tools come or go).

        Raises:
            HostError: No such server.
        """
        self._native.set_enabled(server, enabled)

    def events(self) -> "Events":
        """An async iterator of what happens from now on (:class:`~switchboard.Event`):
        server states, reconnects, catalogue changes, log messages. It ends when the host
        is closed::

            async for event in host.events():
                if event.type == "tools_changed":
                    tools = await host.tools()
        """
        return Events(self._native.events())

    async def close(self) -> None:
        """Stops every server; every :meth:`events` iterator ends."""
        await self._native.shutdown()

    async def __aenter__(self) -> "Host":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class Events:
    """The host's events from the moment :meth:`Host.events` was called; an async iterator
    that ends once the host is closed."""

    def __init__(self, native: "_native.NativeEvents") -> None:
        self._native = native

    def __aiter__(self) -> AsyncIterator[Event]:
        return self

    async def __anext__(self) -> Event:
        event = await self._native.recv()
        if event is None:
            raise StopAsyncIteration
        return Event._from_json(json.loads(event))

    async def next(self, timeout: Optional[float] = None) -> Optional[Event]:
        """The next event, waiting at most ``timeout`` seconds (``None`` when none came in
        time, or the host is closed)."""
        try:
            return await asyncio.wait_for(self.__anext__(), timeout)
        except (StopAsyncIteration, asyncio.TimeoutError):
            return None
