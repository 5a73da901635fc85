"""How the callbacks given to :meth:`switchboard.Host.start` are asked.

The extension calls :func:`invoke` on the host's event loop with the question as JSON; it
builds the request object, calls the callback (awaiting it when it is async) and turns the
answer into the JSON the library reads. A callback that raises refuses: the permission is
denied, the elicitation declined, the sampling request fails with the exception's text.
"""

from __future__ import annotations

import inspect
import json
from typing import Any, Callable

from ._types import Deny, ElicitationRequest, PermissionRequest, SamplingRequest


async def invoke(kind: str, callback: Callable[[Any], Any], request: str) -> str:
    asked = json.loads(request)
    if kind == "permission":
        answer = await _call(callback, PermissionRequest._from_json(asked))
        return json.dumps(_permission(answer))
    if kind == "elicitation":
        answer = await _call(callback, ElicitationRequest._from_json(asked))
        return json.dumps(_elicitation(answer))
    if kind == "sampling":
        try:
            answer = await _call(callback, SamplingRequest._from_json(asked))
        except Exception as error:  # the server is told why
            return json.dumps({"error": f"{type(error).__name__}: {error}"})
        return json.dumps({"result": _sampling(answer)})
    raise ValueError(f"unknown callback kind {kind!r}")


async def _call(callback: Callable[[Any], Any], request: Any) -> Any:
    answer = callback(request)
    if inspect.isawaitable(answer):
        answer = await answer
    return answer


def _permission(answer: Any) -> dict:
    if answer is True or answer == "once":
        return {"answer": "once"}
    if answer == "always":
        return {"answer": "always"}
    if isinstance(answer, Deny):
        return {"answer": "deny", "reason": answer.reason}
    if answer is False or answer is None or answer == "deny":
        return {"answer": "deny", "reason": None}
    raise TypeError(
        f"a permission callback answers True, 'always', False or Deny(reason), not {answer!r}"
    )


def _elicitation(answer: Any) -> dict:
    if isinstance(answer, dict):
        return {"action": "accept", "content": answer}
    if answer is True or answer == "accept":
        return {"action": "accept"}
    if answer == "cancel":
        return {"action": "cancel"}
    if answer is False or answer is None or answer == "decline":
        return {"action": "decline"}
    raise TypeError(
        "an elicitation callback answers a dict (a form's fields), True (a URL opened), "
        f"None or 'decline', or 'cancel', not {answer!r}"
    )


def _sampling(answer: Any) -> dict:
    if isinstance(answer, str):
        return {
            "role": "assistant",
            "content": {"type": "text", "text": answer},
            "model": "python-callback",
            "stopReason": "endTurn",
        }
    if isinstance(answer, dict):
        return answer
    raise TypeError(
        "a sampling callback answers a text or a CreateMessageResult dict "
        f"(role, content, model), not {answer!r}"
    )
