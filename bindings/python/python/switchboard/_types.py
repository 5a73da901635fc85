"""What the host hands out: tools, results, servers, events, and the requests callbacks get."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Generic, List, Optional, TypeVar

from ._errors import HostError

__all__ = [
    "Annotations",
    "Tool",
    "SearchHit",
    "CallResult",
    "Progress",
    "Resource",
    "ReadResult",
    "Prompt",
    "PromptResult",
    "Listing",
    "Readiness",
    "Server",
    "Event",
    "PermissionRequest",
    "Deny",
    "ElicitationRequest",
    "SamplingRequest",
]

T = TypeVar("T")


@dataclass(frozen=True)
class Annotations:
    """What a tool's server says about it (hints, not guarantees)."""

    read_only: bool
    """``readOnlyHint``: it changes nothing."""
    destructive: bool
    """``destructiveHint`` (the protocol's default: true for a tool that is not read-only)."""
    idempotent: bool
    """``idempotentHint``: calling it again with the same arguments does nothing more."""
    open_world: bool
    """``openWorldHint``: it reaches outside (the web, other systems)."""


@dataclass(frozen=True)
class Tool:
    """A tool of the catalogue.

    ``name`` is what to call it by (``mcp__<server>__<tool>``, safe for model APIs as it is);
    ``tool_name`` is the name its server knows it by.
    """

    name: str
    server: Optional[str]
    tool_name: str
    title: Optional[str]
    description: Optional[str]
    input_schema: Dict[str, Any]
    output_schema: Optional[Dict[str, Any]]
    annotations: Annotations
    icons: Optional[List[Any]] = None
    meta: Optional[Dict[str, Any]] = None

    @classmethod
    def _from_json(cls, data: Dict[str, Any]) -> "Tool":
        return cls(
            name=data["qualified_name"],
            server=data.get("server"),
            tool_name=data["name"],
            title=data.get("title"),
            description=data.get("description"),
            input_schema=data.get("input_schema") or {},
            output_schema=data.get("output_schema"),
            annotations=Annotations(**data["annotations"]),
            icons=data.get("icons"),
            meta=data.get("meta"),
        )


@dataclass(frozen=True)
class SearchHit:
    """A tool found by :meth:`~switchboard.Host.search_tools`, with its relevance (BM25,
    comparable only within one search)."""

    tool: Tool
    score: float


@dataclass(frozen=True)
class CallResult:
    """A tool call's result, after the output budget.

    ``is_error`` means the tool ran and reported an error (``isError``): the call itself
    worked. A call that did not (denied, timed out, …) raises :class:`~switchboard.CallError`.
    """

    content: List[Dict[str, Any]]
    """The content blocks, as MCP JSON (``{"type": "text", "text": …}``, images, …)."""
    structured: Optional[Any]
    """``structuredContent``, checked against the tool's output schema."""
    is_error: bool
    text: str
    """The text blocks joined by newlines."""
    raw: Dict[str, Any]
    """The whole ``tools/call`` result as MCP JSON."""
    estimated_tokens: int = 0
    files: List[str] = field(default_factory=list)
    """Files the output budget wrote (a large result saved, binaries)."""
    notes: List[str] = field(default_factory=list)
    """What the output budget did."""

    @classmethod
    def _from_json(cls, data: Dict[str, Any]) -> "CallResult":
        result = data["result"]
        return cls(
            content=list(result.get("content") or []),
            structured=result.get("structuredContent"),
            is_error=bool(data["is_error"]),
            text=data["text"],
            raw=result,
            estimated_tokens=data.get("estimated_tokens", 0),
            files=list(data.get("files") or []),
            notes=list(data.get("notes") or []),
        )


@dataclass(frozen=True)
class Progress:
    """A progress notification of a running call."""

    progress: float
    """How far along (it only grows)."""
    total: Optional[float]
    """Out of how much, when the server knows."""
    message: Optional[str]


@dataclass(frozen=True)
class Resource:
    """A resource a server offers (``resources/list``)."""

    server: str
    uri: str
    name: Optional[str]
    description: Optional[str]
    mime_type: Optional[str]
    raw: Dict[str, Any]

    @classmethod
    def _from_json(cls, data: Dict[str, Any]) -> "Resource":
        item = data["item"]
        return cls(
            server=data["server"],
            uri=item.get("uri", ""),
            name=item.get("name"),
            description=item.get("description"),
            mime_type=item.get("mimeType"),
            raw=item,
        )


@dataclass(frozen=True)
class ReadResult:
    """A resource read, after the output budget."""

    contents: List[Dict[str, Any]]
    """The ``contents`` as MCP JSON (``uri``, ``mimeType``, ``text`` or ``blob``)."""
    text: str
    """The text contents joined by newlines."""
    raw: Dict[str, Any]
    files: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)

    @classmethod
    def _from_json(cls, data: Dict[str, Any]) -> "ReadResult":
        result = data["result"]
        contents = list(result.get("contents") or [])
        text = "\n".join(c["text"] for c in contents if isinstance(c.get("text"), str))
        return cls(
            contents=contents,
            text=text,
            raw=result,
            files=list(data.get("files") or []),
            notes=list(data.get("notes") or []),
        )


@dataclass(frozen=True)
class Prompt:
    """A prompt a server offers. ``name`` is its qualified name (what
    :meth:`~switchboard.Host.prompt` takes); ``prompt_name`` its server's name for it."""

    name: str
    server: str
    prompt_name: str
    description: Optional[str]
    arguments: List[Dict[str, Any]]
    raw: Dict[str, Any]

    @classmethod
    def _from_json(cls, data: Dict[str, Any]) -> "Prompt":
        definition = data.get("definition") or {}
        return cls(
            name=data["name"],
            server=data["server"],
            prompt_name=data["prompt"],
            description=definition.get("description"),
            arguments=list(definition.get("arguments") or []),
            raw=definition,
        )


@dataclass(frozen=True)
class PromptResult:
    """A prompt's messages (``prompts/get``)."""

    messages: List[Dict[str, Any]]
    description: Optional[str]
    raw: Dict[str, Any]

    @classmethod
    def _from_json(cls, data: Dict[str, Any]) -> "PromptResult":
        return cls(
            messages=list(data.get("messages") or []),
            description=data.get("description"),
            raw=data,
        )


class Listing(List[T], Generic[T]):
    """A list of what the servers answered, with the servers that failed to answer as
    :class:`~switchboard.HostError`\\ s in ``failures``, and for the catalogue's tools what
    the user should know (tools left out, descriptions cut) in ``issues``."""

    failures: List[HostError]
    issues: List[str]

    def __init__(
        self,
        items: List[T],
        failures: Optional[List[HostError]] = None,
        issues: Optional[List[str]] = None,
    ) -> None:
        super().__init__(items)
        self.failures = list(failures or [])
        self.issues = list(issues or [])


@dataclass(frozen=True)
class Readiness:
    """What :meth:`~switchboard.Host.wait_settled` saw: ``settled`` when no server is still
    connecting, else the names of those that are in ``pending``."""

    pending: List[str]

    @property
    def settled(self) -> bool:
        return not self.pending

    def __bool__(self) -> bool:
        return self.settled


@dataclass(frozen=True)
class Server:
    """A configured server and its state.

    ``state`` is one of ``pending``, ``connected``, ``failed``, ``needs-auth``, ``disabled``
    and ``lazy`` (not running, started by the first request that needs it).
    """

    name: str
    state: str
    pid: Optional[int]
    """The process id of a running stdio server."""
    message: Optional[str]
    """Why it failed, or what to do for a login."""
    info: Optional[Dict[str, Any]]
    """What a connected server said about itself: ``name``, ``title``, ``version``,
    ``protocol_version``, ``instructions``."""
    raw: Dict[str, Any]

    @classmethod
    def _from_json(cls, data: Dict[str, Any]) -> "Server":
        return cls(
            name=data["name"],
            state=data["state"],
            pid=data.get("pid"),
            message=data.get("message"),
            info=data.get("info"),
            raw=data,
        )


@dataclass(frozen=True)
class Event:
    """Something that happened behind the host.

    ``type`` is one of:

    - ``state``: a server's state changed (``state``; ``data`` has its details);
    - ``reconnecting``: a reconnect is scheduled (``data``: ``attempt``, ``delay`` in seconds,
      ``message``, why the server went);
    - ``tools_changed``: a server's tools changed in the catalogue (``data``: ``added``,
      ``removed``, ``changed`` qualified names); :meth:`~switchboard.Host.tools` lists the
      change by the time it arrives;
    - ``resources_changed``, ``prompts_changed``, ``resource_updated`` (``data["uri"]``),
      ``removed`` (a reload removed the server);
    - ``log``: a server's log message (``data``: ``level``, ``logger``, ``data``);
    - ``lagged``: this iterator was too slow and missed ``data["missed"]`` events.
    """

    type: str
    server: Optional[str]
    state: Optional[str]
    data: Dict[str, Any]

    @classmethod
    def _from_json(cls, data: Dict[str, Any]) -> "Event":
        return cls(
            type=data["type"],
            server=data.get("server"),
            state=data.get("state") if data["type"] == "state" else None,
            data=data,
        )


@dataclass(frozen=True)
class PermissionRequest:
    """A call waiting for permission: the ``on_permission`` callback answers ``True`` (this
    call), ``"always"`` (this tool, for the rest of the host), ``False`` or
    :class:`Deny` (with a reason the caller sees)."""

    tool: str
    """The qualified name, ``mcp__<server>__<tool>``."""
    server: str
    name: str
    """The tool's name on its server."""
    arguments: Dict[str, Any]
    read_only: bool
    destructive: bool

    @classmethod
    def _from_json(cls, data: Dict[str, Any]) -> "PermissionRequest":
        return cls(**data)


@dataclass(frozen=True)
class Deny:
    """A permission callback's refusal, with the reason the caller is told."""

    reason: Optional[str] = None


@dataclass(frozen=True)
class ElicitationRequest:
    """A server asks the user something. ``mode`` is ``form`` (fill in ``requested_schema``:
    answer a dict of its fields) or ``url`` (open ``url``: answer ``True`` once it is).
    ``None`` or ``"decline"`` declines, ``"cancel"`` dismisses. ``refused`` says why the
    last answer was refused (it did not match the schema) when the callback is asked again."""

    server: str
    tool: Optional[str]
    mode: str
    message: str
    requested_schema: Optional[Dict[str, Any]] = None
    url: Optional[str] = None
    elicitation_id: Optional[str] = None
    refused: Optional[str] = None
    params: Optional[Dict[str, Any]] = None

    @classmethod
    def _from_json(cls, data: Dict[str, Any]) -> "ElicitationRequest":
        return cls(**data)


@dataclass(frozen=True)
class SamplingRequest:
    """A server asks the program's model for a message. ``params`` are the
    ``sampling/createMessage`` params (``messages``, ``maxTokens``, ``systemPrompt``…); the
    callback answers a text or a ``CreateMessageResult`` dict."""

    server: str
    tool: Optional[str]
    params: Dict[str, Any]

    @classmethod
    def _from_json(cls, data: Dict[str, Any]) -> "SamplingRequest":
        return cls(**data)
