"""The exceptions of the ``switchboard`` package.

Each keeps what the library can tell about a failure (which server, whether it was a timeout,
a login still to do, or a refusal) as attributes, and the whole error chain as its message.
"""

from __future__ import annotations

from typing import Optional

__all__ = ["SwitchboardError", "CallError", "HostError", "StartError"]


class SwitchboardError(Exception):
    """Anything the host could not do.

    Attributes:
        server: The server the request went to, when it got that far.
        is_timeout: The server did not answer in time (or did not connect in time).
        needs_auth: The server waits for a login (``switchboard mcp login NAME``).
        is_denied: A permission rule, a hook or the permission callback refused the call.

    ``str(error)`` is the error and its causes on one line (``error: cause: cause``).
    """

    def __init__(
        self,
        message: str,
        server: Optional[str] = None,
        is_timeout: bool = False,
        needs_auth: bool = False,
        is_denied: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.server = server
        self.is_timeout = is_timeout
        self.needs_auth = needs_auth
        self.is_denied = is_denied

    def __reduce__(self):  # pickles with its attributes
        return (
            type(self),
            (self.message, self.server, self.is_timeout, self.needs_auth, self.is_denied),
        )


class CallError(SwitchboardError):
    """A tool call that did not succeed: no such tool, invalid arguments, denied, the server
    was not connected or did not answer in time, its output did not match its schema.

    A tool that ran and reported an error is not one: that is a
    :class:`~switchboard.CallResult` whose ``is_error`` is true.
    """


class HostError(SwitchboardError):
    """A request other than a call that did not succeed (a read, a prompt, a required server
    that did not connect in :meth:`~switchboard.Host.wait_settled`, an unknown server)."""


class StartError(SwitchboardError):
    """The host could not start: a limit set in the environment is not valid, or an ``allow``
    or ``deny`` pattern is not one."""
