"""The model seen by the reference agent, and a scripted one for demos and tests.

Any object with ``async def complete(request: LLMRequest) -> LLMResponse`` is a ``Model``:
wrap a provider SDK in one to drive the reference agent with a real LLM.
``ScriptedModel`` plays a fixed script instead, so a session is reproducible::

    model = ScriptedModel([
        tool_use("exec", {"command": "ls"}, id="c1"),
        # a callable step sees the request, e.g. the result of the call above
        lambda req: reply(f"ls said: {last_tool_result(req)['content']['stdout']}"),
    ])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeAlias, runtime_checkable

from ..pipeline.payloads import LLMRequest, LLMResponse, ToolCall

__all__ = [
    "FINISHED",
    "Model",
    "ScriptStep",
    "ScriptedModel",
    "last_tool_result",
    "reply",
    "tool_use",
]

FINISHED = "(script finished)"
"""The content of the final answer a ``ScriptedModel`` gives once its script is used up."""


@runtime_checkable
class Model(Protocol):
    """What the agent calls for each step: one LLM request in, one response out."""

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Answer ``request``: text (a final answer) and/or tool calls."""
        ...


ScriptStep: TypeAlias = "LLMResponse | Callable[[LLMRequest], LLMResponse]"


class ScriptedModel:
    """A deterministic ``Model`` that plays ``steps`` in order, one per ``complete`` call.

    A step is an ``LLMResponse``, returned as is, or a callable that receives the request
    and returns the response — so the script can react to what happened, e.g. to a
    blocked tool call (see ``last_tool_result``).  The script is shared by every turn
    and session that uses the model; once it is used up every call answers
    ``LLMResponse(content=FINISHED, stop_reason="end_turn")``, which ends the turn.

    Attributes:
        requests: every request received, in order (for tests and reports).
    """

    def __init__(self, steps: Iterable[ScriptStep]) -> None:
        self._steps: list[ScriptStep] = list(steps)
        self._position = 0
        self.requests: list[LLMRequest] = []

    def __repr__(self) -> str:
        return f"<ScriptedModel step {self._position}/{len(self._steps)}>"

    @property
    def remaining(self) -> int:
        """How many scripted steps have not been played yet."""
        return len(self._steps) - self._position

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Return the next scripted response (or the final answer when the script is over).

        Raises:
            TypeError: a callable step returned something other than an ``LLMResponse``.
            Exception: whatever a callable step raises, unchanged.
        """
        self.requests.append(request)
        if self._position >= len(self._steps):
            return LLMResponse(content=FINISHED, stop_reason="end_turn")
        step = self._steps[self._position]
        self._position += 1
        response = step if isinstance(step, LLMResponse) else step(request)
        if not isinstance(response, LLMResponse):
            raise TypeError(
                f"script step {self._position} returned {type(response).__name__}, "
                "not an LLMResponse"
            )
        return response


def reply(text: str) -> LLMResponse:
    """A final answer: text and no tool calls."""
    return LLMResponse(content=text, stop_reason="end_turn")


def tool_use(name: str, args: dict[str, Any], *, id: str, text: str = "") -> LLMResponse:
    """A response asking for one tool call (``text`` is what the model says alongside)."""
    return LLMResponse(
        content=text, tool_calls=[ToolCall(id=id, name=name, args=args)], stop_reason="tool_use"
    )


def last_tool_result(request: LLMRequest) -> dict[str, Any] | None:
    """The most recent ``role="tool"`` message of ``request`` (as the agent appended it:
    tool_call_id, name, content, status, is_error), or None if there is none."""
    return next((m for m in reversed(request.messages) if m.get("role") == "tool"), None)
