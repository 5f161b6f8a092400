"""Payload structs passed through the hooks.

Inputs are frozen (read-only context for the handler); outputs are mutable and are
mutated in place by the handlers, then used by the next handler and by the operation.
Every field that can have a default has one, so fields can be added without breaking
handlers.  The same struct objects travel through the whole chain: nothing is copied.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = [
    "Approval",
    "ApprovalRequest",
    "CommandBeforeInput",
    "CommandBeforeOutput",
    "CompactInput",
    "CompactOutput",
    "LLMAfterInput",
    "LLMAfterOutput",
    "LLMBeforeInput",
    "LLMRequest",
    "LLMResponse",
    "MessageBeforeInput",
    "MessageBeforeOutput",
    "ParamsBeforeInput",
    "ParamsBeforeOutput",
    "ToolAfterInput",
    "ToolAfterOutput",
    "ToolBeforeInput",
    "ToolBeforeOutput",
    "ToolCall",
    "ToolResult",
    "ToolStatus",
]

ToolStatus = Literal["ok", "error", "blocked", "denied", "responded", "aborted"]


class ToolResult(msgspec.Struct, kw_only=True):
    """What a tool call returns to the agent.

    ``status`` is one of ok | error | blocked | denied | responded | aborted.  Blocked,
    denied and aborted results have ``is_error=True`` and
    ``output={"status": <status>, "tool": <name>, "reason": <reason>}``.
    """

    output: Any = None
    is_error: bool = False
    status: ToolStatus = "ok"
    details: dict[str, Any] = msgspec.field(default_factory=dict)


def refusal(status: ToolStatus, tool: str, reason: str, **details: Any) -> ToolResult:
    """Build the error result the agent sees for a blocked, denied or aborted call."""
    return ToolResult(
        output={"status": status, "tool": tool, "reason": reason},
        is_error=True,
        status=status,
        details=details,
    )


def error_result(exc: BaseException) -> ToolResult:
    """The result of an operation that raised: ``output="<ExcType>: <message>"``,
    ``details["error_type"]`` the exception's class name."""
    return ToolResult(
        output=f"{type(exc).__name__}: {exc}",
        is_error=True,
        status="error",
        details={"error_type": type(exc).__qualname__},
    )


# -- message / params ---------------------------------------------------------------


class MessageBeforeInput(msgspec.Struct, frozen=True, kw_only=True):
    turn_id: str = ""
    agent_id: str = ""
    session_key: str = ""
    provider: str = ""
    model: str = ""


class MessageBeforeOutput(msgspec.Struct, kw_only=True):
    message: str = ""
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class ParamsBeforeInput(msgspec.Struct, frozen=True, kw_only=True):
    turn_id: str = ""
    agent_id: str = ""
    session_key: str = ""
    message: str = ""
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class ParamsBeforeOutput(msgspec.Struct, kw_only=True):
    provider: str = ""
    model: str = ""
    think_level: str | None = None
    reasoning_level: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


# -- llm ----------------------------------------------------------------------------


class ToolCall(msgspec.Struct, kw_only=True):
    """A tool call requested by the model."""

    id: str
    name: str
    args: dict[str, Any] = msgspec.field(default_factory=dict)


class LLMRequest(msgspec.Struct, kw_only=True):
    """An LLM request; it is the (mutable) output of ``llm.before``."""

    system: str = ""
    messages: list[dict[str, Any]] = msgspec.field(default_factory=list)
    tools: list[dict[str, Any]] = msgspec.field(default_factory=list)
    params: dict[str, Any] = msgspec.field(default_factory=dict)
    headers: dict[str, str] = msgspec.field(default_factory=dict)


class LLMResponse(msgspec.Struct, kw_only=True):
    content: str = ""
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    usage: dict[str, int] = msgspec.field(default_factory=dict)
    stop_reason: str = "end_turn"


class LLMBeforeInput(msgspec.Struct, frozen=True, kw_only=True):
    agent_id: str = ""
    session_key: str = ""
    turn_id: str = ""
    attempt: int = 1


class LLMAfterInput(msgspec.Struct, frozen=True, kw_only=True):
    agent_id: str = ""
    session_key: str = ""
    turn_id: str = ""
    attempt: int = 1
    request: LLMRequest = msgspec.field(default_factory=LLMRequest)


class LLMAfterOutput(msgspec.Struct, kw_only=True):
    response: LLMResponse = msgspec.field(default_factory=LLMResponse)
    retry: bool = False


# -- tool ---------------------------------------------------------------------------


class ToolBeforeInput(msgspec.Struct, frozen=True, kw_only=True):
    tool_name: str
    turn_id: str = ""
    raw_name: str = ""
    tool_call_id: str = ""
    agent_id: str = ""
    session_key: str = ""


class ToolBeforeOutput(msgspec.Struct, kw_only=True):
    """Mutable output of ``tool.before``.

    Set ``block``/``block_reason`` to block the call, or ``result`` (a ``ToolResult`` or
    any value, wrapped as its output) to answer it without running the tool.
    """

    args: dict[str, Any] = msgspec.field(default_factory=dict)
    block: bool = False
    block_reason: str = ""
    result: Any = None


class ApprovalRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What an approver sees: the call with its final arguments.  What the
    human-approval handler sees also names the approver that asked (``asked_by``), the
    rule it named (``Approval.ask(reason, rule=...)``) and the principal the call is
    made for (``context.current_principal()``: a JWT's claims, or None)."""

    tool_name: str
    tool_call_id: str = ""
    args: dict[str, Any] = msgspec.field(default_factory=dict)
    agent_id: str = ""
    session_key: str = ""
    turn_id: str = ""
    asked_by: str = ""
    rule: str = ""
    principal: dict[str, Any] | None = None


class Approval(msgspec.Struct, frozen=True, kw_only=True):
    """An approver's answer: ``Approval.allow()``, ``Approval.deny(reason)`` or
    ``Approval.ask(reason)`` (the pipeline's human-approval handler decides)."""

    decision: Literal["allow", "deny", "ask"] = "allow"
    reason: str = ""
    #: an ask's rule (its pattern: what a standing grant is bound to)
    rule: str = ""
    #: a human's allow of other arguments (edit then approve): the call is judged
    #: again, by the tool.before handlers and the approvers, with these
    args: dict[str, Any] | None = None

    @classmethod
    def allow(cls, reason: str = "") -> Approval:
        return cls(decision="allow", reason=reason)

    @classmethod
    def deny(cls, reason: str = "") -> Approval:
        return cls(decision="deny", reason=reason)

    @classmethod
    def ask(cls, reason: str = "", *, rule: str = "") -> Approval:
        return cls(decision="ask", reason=reason, rule=rule)

    @classmethod
    def edited(cls, args: dict[str, Any], reason: str = "") -> Approval:
        """A human's allow of the call with ``args`` instead (judged again first)."""
        return cls(decision="allow", reason=reason, args=args)


class ToolAfterInput(msgspec.Struct, frozen=True, kw_only=True):
    tool_name: str
    turn_id: str = ""
    tool_call_id: str = ""
    is_error: bool = False
    blocked: bool = False
    status: ToolStatus = "ok"
    duration_ns: int = 0
    raw_name: str = ""
    agent_id: str = ""
    session_key: str = ""
    args: dict[str, Any] = msgspec.field(default_factory=dict)


class ToolAfterOutput(msgspec.Struct, kw_only=True):
    """Mutable output of ``tool.after``.

    A plain value assigned to ``result`` (not a ``ToolResult``) becomes the output of
    the result it replaces, which keeps its status, is_error and details: every handler
    after it (a redactor, a process hook) sees a ``ToolResult``.  Done on assignment,
    so the handler loops check nothing per handler.
    """

    result: ToolResult = msgspec.field(default_factory=ToolResult)
    retry: bool = False

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "result" and not isinstance(value, ToolResult):
            last = self.result
            value = ToolResult(
                output=value,
                is_error=last.is_error,
                status=last.status,
                details=dict(last.details),
            )
        msgspec.Struct.__setattr__(self, name, value)


# -- command / compact ----------------------------------------------------------------


class CommandBeforeInput(msgspec.Struct, frozen=True, kw_only=True):
    turn_id: str = ""
    command: str
    agent_id: str = ""
    session_key: str = ""


class CommandBeforeOutput(msgspec.Struct, kw_only=True):
    args: dict[str, Any] = msgspec.field(default_factory=dict)
    block: bool = False
    block_reason: str = ""


class CompactInput(msgspec.Struct, frozen=True, kw_only=True):
    turn_id: str = ""
    agent_id: str = ""
    session_key: str = ""
    reason: str = ""
    messages: list[Any] = msgspec.field(default_factory=list)


class CompactOutput(msgspec.Struct, kw_only=True):
    """Mutable output of ``session.compact``.

    ``messages`` are the messages to keep verbatim; ``summary`` replaces the rest (when an
    interceptor leaves it ``None`` the compaction callable writes it); ``instructions``
    are passed to that callable.
    """

    messages: list[Any] = msgspec.field(default_factory=list)
    summary: str | None = None
    instructions: str = ""
