"""The synchronous facade: :class:`SyncHost`, for scripts and notebooks."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Awaitable, Callable, Iterator, List, Mapping, Optional, TypeVar

from ._host import Events, Host
from ._types import (
    CallResult,
    Event,
    Listing,
    Progress,
    Prompt,
    PromptResult,
    ReadResult,
    Readiness,
    Resource,
    SearchHit,
    Server,
    Tool,
)

__all__ = ["SyncHost", "SyncEvents"]

T = TypeVar("T")


class SyncHost:
    """:class:`~switchboard.Host` without ``await``: each method blocks until its answer.

    The host runs on an event loop in a thread of its own, where the callbacks run too
    (plain functions or coroutine functions)::

        with SyncHost.start(config=["mcp.json"], allow=["mcp__kit"]) as host:
            host.wait_settled(30)
            print(host.call("mcp__kit__echo", {"text": "hi"}).text)

    Don't use it from inside a running event loop's callbacks: use :class:`Host` there.
    """

    def __init__(self, host: Host, loop: asyncio.AbstractEventLoop, thread: threading.Thread):
        # Made by `SyncHost.start`.
        self._host = host
        self._loop = loop
        self._thread = thread
        self._closed = False

    @classmethod
    def start(cls, config: Any = (), **options: Any) -> "SyncHost":
        """Starts a host; the same arguments as :meth:`Host.start`.

        Use it as ``with SyncHost.start(...) as host:`` or call :meth:`close` when done.
        """
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="switchboard", daemon=True)
        thread.start()

        async def start() -> Host:
            return await Host.start(config, **options)

        try:
            host = asyncio.run_coroutine_threadsafe(start(), loop).result()
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()
            raise
        return cls(host, loop, thread)

    def _run(self, work: Callable[[], Awaitable[T]], timeout: Optional[float] = None) -> T:
        if self._closed:
            raise RuntimeError("this SyncHost is closed")

        async def run() -> T:
            return await work()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    @property
    def host(self) -> Host:
        """The asynchronous :class:`~switchboard.Host` underneath (it lives on this facade's
        own event loop)."""
        return self._host

    @property
    def config_issues(self) -> List[str]:
        """See :attr:`Host.config_issues`."""
        return self._host.config_issues

    def wait_settled(self, timeout: float = 30.0) -> Readiness:
        """See :meth:`Host.wait_settled`."""
        return self._run(lambda: self._host.wait_settled(timeout))

    def tools(self) -> Listing[Tool]:
        """See :meth:`Host.tools`."""
        return self._run(self._host.tools)

    def search_tools(self, query: str, limit: int = 10) -> List[SearchHit]:
        """See :meth:`Host.search_tools`."""
        return self._run(lambda: self._host.search_tools(query, limit))

    def call(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Optional[float] = None,
        on_progress: Optional[Callable[[Progress], Any]] = None,
    ) -> CallResult:
        """See :meth:`Host.call` (``on_progress`` runs on the host's thread)."""
        return self._run(
            lambda: self._host.call(name, arguments, timeout=timeout, on_progress=on_progress)
        )

    def resources(self, server: Optional[str] = None) -> Listing[Resource]:
        """See :meth:`Host.resources`."""
        return self._run(lambda: self._host.resources(server))

    def read(self, server: str, uri: str, *, timeout: Optional[float] = None) -> ReadResult:
        """See :meth:`Host.read`."""
        return self._run(lambda: self._host.read(server, uri, timeout=timeout))

    def prompts(self, server: Optional[str] = None) -> Listing[Prompt]:
        """See :meth:`Host.prompts`."""
        return self._run(lambda: self._host.prompts(server))

    def prompt(
        self,
        name: str,
        arguments: Optional[Mapping[str, str]] = None,
        *,
        timeout: Optional[float] = None,
    ) -> PromptResult:
        """See :meth:`Host.prompt`."""
        return self._run(lambda: self._host.prompt(name, arguments, timeout=timeout))

    def servers(self) -> List[Server]:
        """See :meth:`Host.servers`."""
        return self._host.servers()

    def process_id(self, server: str) -> Optional[int]:
        """See :meth:`Host.process_id`."""
        return self._host.process_id(server)

    def reconnect(self, server: str) -> None:
        """See :meth:`Host.reconnect`."""
        self._host.reconnect(server)

    def set_enabled(self, server: str, enabled: bool) -> None:
        """See :meth:`Host.set_enabled`."""
        self._host.set_enabled(server, enabled)

    def events(self) -> "SyncEvents":
        """An iterator of the host's events from now on (see :meth:`Host.events`); it ends
        when the host is closed. :meth:`SyncEvents.next` waits for one with a bound."""
        return SyncEvents(self, self._host.events())

    def close(self) -> None:
        """Stops every server and the host's thread. Closing twice does nothing."""
        if self._closed:
            return
        try:
            self._run(self._host.close)
        finally:
            self._closed = True
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()

    def __enter__(self) -> "SyncHost":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class SyncEvents:
    """:class:`~switchboard.Events` without ``await``."""

    def __init__(self, owner: SyncHost, events: Events) -> None:
        self._owner = owner
        self._events = events

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        event = self.next()
        if event is None:
            raise StopIteration
        return event

    def next(self, timeout: Optional[float] = None) -> Optional[Event]:
        """The next event, waiting at most ``timeout`` seconds (``None`` when none came in
        time, or the host is closed)."""
        if self._owner._closed:
            return None
        return self._owner._run(lambda: self._events.next(timeout))
