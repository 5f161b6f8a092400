"""Middleware contexts: one object per stage invocation, carrying the per-call state.

Middleware instances stay stateless; whatever a layer needs to remember during one call
goes into ``ctx.state`` (created on first use) or into its own locals.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, ClassVar, Protocol

import msgspec

from .payloads import CompactOutput, LLMRequest, LLMResponse, MessageBeforeOutput, ToolResult


class TurnInfo(Protocol):
    """The turn a context belongs to, as a layer reads it (a ``Turn``; typed here so
    that this module does not import the turn's)."""

    turn_id: str
    agent_id: str
    session_key: str
    provider: str
    model: str
    user_message: str
    metadata: dict[str, Any]


__all__ = [
    "CommandContext",
    "CompactContext",
    "Context",
    "LLMContext",
    "MessageContext",
    "ParamsContext",
    "ToolContext",
    "TurnContext",
    "TurnInfo",
    "acting_as",
    "current_principal",
]

_principal: ContextVar[dict[str, Any] | None] = ContextVar("interpose_principal", default=None)


def current_principal() -> dict[str, Any] | None:
    """The claims of the principal the calls of this task are made for (a bearer
    token's, set by the front that checked it with ``acting_as``), or None."""
    return _principal.get()


@contextmanager
def acting_as(claims: Mapping[str, Any] | None) -> Iterator[None]:
    """The calls made inside (in this task and the tasks it starts) are made for the
    principal ``claims``: ``ToolContext.principal``, the approval request's."""
    token = _principal.set(dict(claims) if claims is not None else None)
    try:
        yield
    finally:
        _principal.reset(token)


class Context:
    """Base of the stage contexts: the turn (None for a bare ``pipe.call_tool`` without
    subscribers) and a scratch ``state`` dict."""

    __slots__ = ()
    turn: TurnInfo | None
    _state: dict[str, Any] | None

    stage: ClassVar[str] = ""

    def has_result(self) -> bool:
        """Whether the stage has what it returns (so a layer may skip ``call_next``)."""
        return True

    @property
    def state(self) -> dict[str, Any]:
        state = self._state
        if state is None:
            state = {}
            # a slot or a field of the concrete context (this base has no slots)
            self._state = state  # type: ignore[misc]
        return state

    def __repr__(self) -> str:
        names = getattr(type(self), "__struct_fields__", None) or (
            name for cls in type(self).__mro__ for name in getattr(cls, "__slots__", ())
        )
        fields = ", ".join(
            f"{name}={getattr(self, name)!r}"
            for name in names
            if not name.startswith("_") and name != "turn"
        )
        return f"{type(self).__name__}({fields})"


class _StageContext(Context):
    """The contexts of the stages but the tool's: plain slotted objects."""

    # _escaping: the exception on its way out through the onion (see onion.py); set only
    # then, never initialised, so a call that does not fail pays nothing
    __slots__ = ("_escaping", "_state", "turn")
    _escaping: BaseException

    def __init__(self, turn: TurnInfo | None) -> None:
        self.turn = turn
        self._state = None


class TurnContext(_StageContext):
    """Context of the ``turn`` stage; ``result`` is what the turn body returned."""

    turn: TurnInfo
    __slots__ = ("body", "result")
    stage = "turn"

    def __init__(self, turn: TurnInfo, body: Callable[[Any], Any]) -> None:
        super().__init__(turn)
        self.body = body
        self.result: Any = None


class ToolContext(msgspec.Struct, Context, eq=False):
    """Context of the ``tool`` stage, and the call's one record: who called which tool
    with which arguments, and what became of it.  ``args`` is mutable; ``result`` is
    None until the core (or a short-circuiting middleware) sets it.

    A struct (built in C, with every field's default) rather than a slotted class: the
    tool stage's own state of the call lives here too, so a call on the full path
    builds one record, not two.
    """

    turn: TurnInfo | None
    tool_name: str
    raw_name: str
    # "" only before the tool stage starts: it mints the id of a call given none
    call_id: str
    args: dict[str, Any]
    call: Callable[[dict[str, Any]], Any]
    agent_id: str
    session_key: str
    result: ToolResult | None = None
    _state: dict[str, Any] | None = None
    # the exception on its way out through the onion (see onion.py)
    _escaping: BaseException | None = None
    # The tool stage's state of the call on its full path (``tool_stage.full_path``),
    # read by its steps, its events and its ending: the handlers' input, the
    # before-output, the deadline watch of its handlers, what ran for how long, who
    # decided.  Middleware has no use for them.
    _inp: Any = None  # ToolBeforeInput
    _out: Any = None  # ToolBeforeOutput
    _watch: Any = None  # deadlines.Watch
    _times: list[tuple[str, int]] | None = None  # when tool_exec_end will read them
    _attempt: int = 0  # runs of the tool so far
    _duration: int = 0
    # a run began and its tool_exec_end is not published yet: whatever ends the call
    # now (a cancellation, HardAbort, an on_error="raise" failure) must publish it
    _unended: bool = False
    _decider: Any = None  # chain.Step
    _reason: str = ""

    stage: ClassVar[str] = "tool"

    @property
    def principal(self) -> dict[str, Any] | None:
        """Who the call is made for (``acting_as``): a bearer token's claims, or None."""
        return _principal.get()

    def has_result(self) -> bool:
        return self.result is not None

    __repr__ = Context.__repr__  # the public fields, not the struct's every one


class LLMContext(_StageContext):
    """Context of the ``llm`` stage: the (mutable) request, the response once there."""

    turn: TurnInfo
    __slots__ = ("attempt", "request", "response")
    stage = "llm"

    def __init__(self, turn: TurnInfo, request: LLMRequest) -> None:
        super().__init__(turn)
        self.request = request
        self.response: LLMResponse | None = None
        self.attempt = 0

    def has_result(self) -> bool:
        return self.response is not None


class MessageContext(_StageContext):
    """Context of the ``message`` stage; ``message`` and ``metadata`` are the output's."""

    turn: TurnInfo
    __slots__ = ("result",)
    stage = "message"

    def __init__(self, turn: TurnInfo, result: MessageBeforeOutput) -> None:
        super().__init__(turn)
        self.result = result

    @property
    def message(self) -> str:
        return self.result.message

    @message.setter
    def message(self, value: str) -> None:
        self.result.message = value

    @property
    def metadata(self) -> dict[str, Any]:
        return self.result.metadata


class ParamsContext(_StageContext):
    """Context of the ``params`` stage; attribute access reads and writes the output's
    fields (provider, model, think_level, temperature, …)."""

    turn: TurnInfo
    __slots__ = ("result",)
    stage = "params"

    def __init__(self, turn: TurnInfo, result: Any) -> None:
        super().__init__(turn)
        self.result = result

    def __getattr__(self, name: str) -> Any:
        if name in type(self.result).__struct_fields__:
            return getattr(self.result, name)
        raise AttributeError(name)

    def __setattr__(self, name: str, value: Any) -> None:
        if (
            name not in ParamsContext.__slots__
            and name not in _StageContext.__slots__
            and hasattr(type(self.result), name)
        ):
            setattr(self.result, name, value)
        else:
            object.__setattr__(self, name, value)


class CommandContext(_StageContext):
    """Context of the ``command`` stage."""

    turn: TurnInfo
    __slots__ = ("agent_id", "args", "call", "command", "result", "session_key")
    stage = "command"

    def __init__(
        self,
        turn: TurnInfo,
        command: str,
        args: dict[str, Any],
        call: Callable[[dict[str, Any]], Any],
    ) -> None:
        super().__init__(turn)
        self.command = command
        self.args = args
        self.call = call
        self.agent_id = turn.agent_id
        self.session_key = turn.session_key
        self.result: ToolResult | None = None

    def has_result(self) -> bool:
        return self.result is not None


class CompactContext(_StageContext):
    """Context of the ``compact`` stage: the history and, once set, the CompactOutput."""

    turn: TurnInfo
    __slots__ = ("call", "messages", "reason", "result")
    stage = "compact"

    def __init__(
        self, turn: TurnInfo, messages: list[Any], reason: str, call: Callable[..., Any]
    ) -> None:
        super().__init__(turn)
        self.messages = messages
        self.reason = reason
        self.call = call
        self.result: CompactOutput | None = None

    def has_result(self) -> bool:
        return self.result is not None
