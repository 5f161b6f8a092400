"""Middleware contexts: one object per stage invocation, carrying the per-call state.

Middleware instances stay stateless; whatever a layer needs to remember during one call
goes into ``ctx.state`` (created on first use) or into its own locals.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

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
]


class Context:
    """Base of the stage contexts: the turn (None for a bare ``pipe.call_tool`` without
    subscribers) and a scratch ``state`` dict."""

    # _escaping: the exception on its way out through the onion (see chain.build_onion);
    # set only then, never initialised, so a call that does not fail pays nothing.
    # _reached: the position of the innermost layer entered (see chain._guarded_layer),
    # set by the layers of an onion with a guarded layer, never initialised either.
    __slots__ = ("_escaping", "_reached", "_state", "turn")
    _escaping: BaseException
    _reached: int

    stage = ""

    def __init__(self, turn: TurnInfo | None) -> None:
        self.turn = turn
        self._state: dict[str, Any] | None = None

    def has_result(self) -> bool:
        """Whether the stage has what it returns (so a layer may skip ``call_next``)."""
        return True

    @property
    def state(self) -> dict[str, Any]:
        if self._state is None:
            self._state = {}
        return self._state

    def __repr__(self) -> str:
        fields = ", ".join(
            f"{name}={getattr(self, name)!r}"
            for cls in type(self).__mro__
            for name in getattr(cls, "__slots__", ())
            if not name.startswith("_") and name != "turn"
        )
        return f"{type(self).__name__}({fields})"


class TurnContext(Context):
    """Context of the ``turn`` stage; ``result`` is what the turn body returned."""

    turn: TurnInfo
    __slots__ = ("body", "result")
    stage = "turn"

    def __init__(self, turn: TurnInfo, body: Callable[[Any], Any]) -> None:
        super().__init__(turn)
        self.body = body
        self.result: Any = None


class ToolContext(Context):
    """Context of the ``tool`` stage.  ``args`` is mutable; ``result`` is None until the
    core (or a short-circuiting middleware) sets it."""

    __slots__ = (
        "agent_id",
        "args",
        "call",
        "call_id",
        "raw_name",
        "result",
        "session_key",
        "tool_name",
    )
    stage = "tool"

    def __init__(
        self,
        turn: TurnInfo | None,
        tool_name: str,
        raw_name: str,
        call_id: str | None,
        args: dict[str, Any],
        call: Callable[[dict[str, Any]], Any],
        agent_id: str,
        session_key: str,
    ) -> None:
        # Context.__init__ inlined: one context per tool call with middleware
        self.turn = turn
        self._state = None
        self.tool_name = tool_name
        self.raw_name = raw_name
        # None only before the tool stage starts: it mints the id of a call given none
        self.call_id: str = call_id  # type: ignore[assignment]
        self.args = args
        self.call = call
        self.agent_id = agent_id
        self.session_key = session_key
        self.result: ToolResult | None = None

    def has_result(self) -> bool:
        return self.result is not None


class LLMContext(Context):
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


class MessageContext(Context):
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


class ParamsContext(Context):
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
            and name not in Context.__slots__
            and hasattr(type(self.result), name)
        ):
            setattr(self.result, name, value)
        else:
            object.__setattr__(self, name, value)


class CommandContext(Context):
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


class CompactContext(Context):
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
