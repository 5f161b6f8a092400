"""Bus events: one msgspec tagged union, ``kind`` is the tag.

Every event carries ``ts`` (ns since the epoch), ``seq`` (per pipeline, increasing),
``turn_id``, ``agent_id`` and ``session_key``.  Durations are integer nanoseconds.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import msgspec

__all__ = [
    "EVENT_KINDS",
    "Event",
    "EventKind",
    "FlowFinding",
    "FlowFlagged",
    "FlowLabeled",
    "HookMessage",
    "InterceptorFailed",
    "LLMRequestSent",
    "LLMResponseReceived",
    "MessageReceived",
    "ParamsResolved",
    "SkipReason",
    "ToolExecEnd",
    "ToolExecSkipped",
    "ToolExecStart",
    "ToolSetChanged",
    "TurnAborted",
    "TurnEnded",
    "TurnStarted",
    "CallRecorded",
    "ShadowDecision",
    "ApprovalRequested",
    "ApprovalDecided",
    "ApprovalExpired",
    "GrantAdded",
    "GrantRevoked",
    "GrantUsed",
    "SandboxViolation",
    "decode_event",
    "encode_event",
]


SkipReason: TypeAlias = Literal["blocked", "denied", "responded"]


class _Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    ts: int = 0
    seq: int = 0
    turn_id: str = ""
    agent_id: str = ""
    session_key: str = ""

    @property
    def kind(self) -> str:
        return self.__struct_config__.tag  # type: ignore[return-value]


class TurnStarted(_Event, tag="turn_started", frozen=True):
    provider: str = ""
    model: str = ""


class MessageReceived(_Event, tag="message_received", frozen=True):
    message: str = ""
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class ParamsResolved(_Event, tag="params_resolved", frozen=True):
    provider: str = ""
    model: str = ""
    params: dict[str, Any] = msgspec.field(default_factory=dict)


class LLMRequestSent(_Event, tag="llm_request", frozen=True):
    attempt: int = 1
    model: str = ""
    messages: int = 0


class LLMResponseReceived(_Event, tag="llm_response", frozen=True):
    attempt: int = 1
    model: str = ""
    duration_ns: int = 0
    stop_reason: str = ""
    tool_calls: int = 0


class ToolExecStart(_Event, tag="tool_exec_start", frozen=True):
    tool_name: str = ""
    tool_call_id: str = ""
    raw_name: str = ""
    attempt: int = 1


class ToolExecEnd(_Event, tag="tool_exec_end", frozen=True):
    """Published once per tool call that reaches the core, whatever happened to it (see
    ``status``), and once per run of the tool: every ``tool_exec_start`` gets exactly
    one, also when a cancellation or an exception ends the call.

    ``interceptors`` names the registrations that ran, in order; ``interceptor_ns``
    holds the wall time each of them took, position by position (it may be shorter
    than ``interceptors``: middleware layers are not timed on their own).

    ``attempt`` numbers the runs of the tool, from 1 (as ``ToolExecStart.attempt``);
    ``retried`` is True on the end of a run that tool.after sent back for another run
    (the call goes on with the next attempt: its outcome is the end with
    ``retried=False``).
    """

    tool_name: str = ""
    tool_call_id: str = ""
    status: str = "ok"
    is_error: bool = False
    duration_ns: int = 0
    decided_by: str = ""
    reason: str = ""
    interceptors: tuple[str, ...] = ()
    interceptor_ns: tuple[int, ...] = ()
    attempt: int = 1
    retried: bool = False


class ToolExecSkipped(_Event, tag="tool_exec_skipped", frozen=True):
    """The operation did not run: ``why`` is blocked, denied or responded."""

    tool_name: str = ""
    tool_call_id: str = ""
    why: SkipReason = "blocked"
    reason: str = ""
    decided_by: str = ""


class InterceptorFailed(_Event, tag="interceptor_failed", frozen=True):
    """A handler failed (raised, or ran past its timeout); ``policy`` is what was done.

    ``handler`` is its qualified name (module included), ``defined_at`` the
    ``file:line`` of its definition, ``raised_at`` the ``file:line`` of the frame that
    raised ("" for a deadline that passed, and in events of older versions).
    """

    hook: str = ""
    interceptor_id: str = ""
    error_type: str = ""
    error: str = ""
    policy: str = ""
    timed_out: bool = False
    tool_name: str = ""
    tool_call_id: str = ""
    handler: str = ""
    defined_at: str = ""
    raised_at: str = ""


class HookMessage(_Event, tag="hook_message", frozen=True):
    """A hook of a Claude Code settings file said something for the caller:
    ``channel`` is ``system_message`` (its ``systemMessage``: a note for the user),
    ``additional_context`` (its ``additionalContext``: for the model) or ``rewake`` (an
    ``asyncRewake`` hook that exited 2: a system reminder that wakes the agent).
    ``event`` is the Claude Code event it ran for (``PreToolUse``…), ``hook`` the
    interpose hook point (``tool.before``, ``turn``…), ``interceptor_id`` the hook's id;
    ``background`` is True when it came from an ``async`` hook, after its call.
    """

    hook: str = ""
    interceptor_id: str = ""
    event: str = ""
    channel: Literal["system_message", "additional_context", "rewake"] = "system_message"
    message: str = ""
    background: bool = False
    tool_name: str = ""
    tool_call_id: str = ""


class ToolSetChanged(_Event, tag="tool_set_changed", frozen=True):
    """The MCP gateway found a server's tool set different from its pins, or a tool
    name made of lookalike characters (``[mcp] pin_*``, docs/mcp.md).

    ``change`` is ``added``, ``removed``, ``renamed``, ``changed`` (description, input
    schema or annotations) or ``lookalike``; ``detail`` says what (``input schema gained
    `exfil_to```); ``decision`` is what the tool gets (``warn``, ``hide``, ``ask``,
    ``block``; ``update`` when the change was accepted into the pins); ``reason`` is what
    a refused call is told; ``old_digest`` and ``new_digest`` are short digests of the
    pinned and the listed tool.
    """

    server: str = ""
    tool_name: str = ""
    change: str = ""
    detail: str = ""
    decision: str = ""
    reason: str = ""
    old_digest: str = ""
    new_digest: str = ""


class ShadowDecision(_Event, tag="shadow_decision", frozen=True):
    """A handler registered with ``mode="shadow"`` decided something that was not
    enforced: ``decision`` is what it would have done (block, deny, ask, respond,
    modify, retry, abort_turn, hard_abort, timeout, error); ``would_block`` says
    whether that would have refused the call (a block, deny, abort, or a failure under
    a fail-closed policy).  ``changed`` names what it would have rewritten (``args``,
    ``result``...).  A shadow handler that lets the call continue publishes nothing.
    """

    hook: str = ""
    interceptor_id: str = ""
    decision: str = ""
    reason: str = ""
    would_block: bool = False
    changed: tuple[str, ...] = ()
    error_type: str = ""
    tool_name: str = ""
    tool_call_id: str = ""
    source: str = ""


class CallRecorded(_Event, tag="call_recorded", frozen=True):
    """One call as a replay needs it, published when recording is switched on
    (``AuditLog.attach(pipe, record_args=True, ...)``, ``[observers.audit]
    record_args``); every value is redacted by the pipeline's ``Redactor``.

    ``stage`` is ``tool``, ``llm``, ``message`` or ``params``.  ``input`` is what the
    agent sent (tool arguments, the LLM request, ``{"message", "metadata"}``, the
    turn's params with its message) before any handler saw it; ``applied`` what the
    operation got after them (None when it did not run); ``output`` what came back
    (the tool result's output, the LLM response), present only when results are
    recorded.  ``status``, ``decided_by`` and ``reason`` are the outcome
    (``ToolResult.status`` for tools).
    """

    stage: str = "tool"
    tool_name: str = ""
    raw_name: str = ""
    tool_call_id: str = ""
    status: str = "ok"
    decided_by: str = ""
    reason: str = ""
    input: Any = None
    applied: Any = None
    output: Any = None
    recorded: tuple[str, ...] = ()


class SandboxViolation(_Event, tag="sandbox_violation", frozen=True):
    """The sandbox (``interpose.sandbox``) refused something a command tried:
    ``violation`` is ``write`` (outside the writable roots), ``read`` (a hidden path),
    ``network`` (a host not on the allow-list) or ``limit`` (time, memory, processes);
    ``target`` the path or ``host:port``; ``detail`` the sentence the tool result
    carries.  ``tool_name`` is the tool (``exec``), or ``mcp__<server>`` for an MCP
    server's process; ``command`` what ran.
    """

    violation: str = ""
    target: str = ""
    detail: str = ""
    tool_name: str = ""
    command: str = ""


class FlowLabeled(_Event, tag="flow_labeled", frozen=True):
    """A session got a label from a tool's result (``interpose.flows``, docs/flows.md):
    ``label`` is ``untrusted`` (the result came from an untrusted source) or ``secret``
    (it carried secrets: an ``.env`` file, a private key...).  ``tool_name``,
    ``tool_call_id`` and ``ordinal`` (the call's place in the session, from 1) say which
    result; ``reason`` why it is a source (``web fetch``, ``reads messages``...);
    ``values`` how many secret values it labelled.  A fleet carries these events, so a
    process serving the same session can take the label over
    (``FlowPolicy.follow``)."""

    label: str = ""
    tool_name: str = ""
    tool_call_id: str = ""
    ordinal: int = 0
    reason: str = ""
    values: int = 0


class FlowFinding(msgspec.Struct, frozen=True, kw_only=True):
    """One argument value of a sink call and where the session first saw it: ``arg``
    is the argument's path (``recipients[0]``), ``value`` the value (masked for a
    secret), ``label`` ``untrusted`` or ``secret``; ``tool_name``, ``tool_call_id``
    and ``ordinal`` name the result it was first seen in (empty for a secret a
    detector found in the argument itself, ``kind`` then says which)."""

    arg: str = ""
    value: str = ""
    label: str = "untrusted"
    tool_name: str = ""
    tool_call_id: str = ""
    ordinal: int = 0
    kind: str = ""


class FlowFlagged(_Event, tag="flow_flagged", frozen=True):
    """The flow rules judged a sink call (``interpose.flows``): it came after untrusted
    input in its session, or it carries a value first seen in an untrusted result or a
    secret.  ``sink`` is what makes the tool a sink (``sends messages``...);
    ``decision`` is ``block``, ``ask`` or ``allow``; ``findings`` the flagged values
    and where each came from; ``reason`` the sentence the call is refused or asked
    with; ``mode`` ``shadow`` when the decision was only recorded."""

    tool_name: str = ""
    tool_call_id: str = ""
    sink: str = ""
    decision: str = ""
    reason: str = ""
    findings: tuple[FlowFinding, ...] = ()
    mode: str = "enforce"


class TurnEnded(_Event, tag="turn_ended", frozen=True):
    duration_ns: int = 0


class TurnAborted(_Event, tag="turn_aborted", frozen=True):
    reason: str = ""
    hard: bool = False
    duration_ns: int = 0


class ApprovalRequested(_Event, tag="approval_requested", frozen=True):
    """An ask became an approval request in an approval store (``interpose.approvals``),
    or a restarted agent found its request there (``resumed``)."""

    request_id: str = ""
    tool_name: str = ""
    tool_call_id: str = ""
    args_hash: str = ""
    asked_by: str = ""
    rule: str = ""
    reason: str = ""
    expires: float = 0.0
    principal_sub: str = ""
    resumed: bool = False


class ApprovalDecided(_Event, tag="approval_decided", frozen=True):
    """A person decided an approval request: ``state`` approved, denied or edited (the
    call goes on with ``edited_args_hash``'s arguments, judged again), by
    ``decided_by``; ``grant_id`` names the grant the decision added."""

    request_id: str = ""
    tool_name: str = ""
    tool_call_id: str = ""
    state: str = ""
    decided_by: str = ""
    reason: str = ""
    edited_args_hash: str = ""
    grant_id: str = ""


class ApprovalExpired(_Event, tag="approval_expired", frozen=True):
    """An approval request got no decision in time: the call is denied."""

    request_id: str = ""
    tool_name: str = ""
    tool_call_id: str = ""
    reason: str = ""


class GrantAdded(_Event, tag="grant_added", frozen=True):
    """A standing grant was added by ``granted_by``, bound to ``rule`` (``match``
    "rule") or ``args_hash`` ("args") for the agent (and its session, scope
    "session"), until ``expires`` (0: until revoked)."""

    grant_id: str = ""
    granted_by: str = ""
    match: str = ""
    scope: str = ""
    tool_name: str = ""
    rule: str = ""
    args_hash: str = ""
    expires: float = 0.0
    request_id: str = ""


class GrantRevoked(_Event, tag="grant_revoked", frozen=True):
    grant_id: str = ""
    revoked_by: str = ""


class GrantUsed(_Event, tag="grant_used", frozen=True):
    """A standing grant allowed a call without asking: the allow, with who granted it."""

    grant_id: str = ""
    granted_by: str = ""
    tool_name: str = ""
    tool_call_id: str = ""
    rule: str = ""
    args_hash: str = ""
    request_id: str = ""


Event: TypeAlias = (
    TurnStarted
    | MessageReceived
    | ParamsResolved
    | LLMRequestSent
    | LLMResponseReceived
    | ToolExecStart
    | ToolExecEnd
    | ToolExecSkipped
    | InterceptorFailed
    | HookMessage
    | ToolSetChanged
    | ShadowDecision
    | CallRecorded
    | SandboxViolation
    | FlowLabeled
    | FlowFlagged
    | TurnEnded
    | TurnAborted
    | ApprovalRequested
    | ApprovalDecided
    | ApprovalExpired
    | GrantAdded
    | GrantRevoked
    | GrantUsed
)

EventKind: TypeAlias = Literal[
    "turn_started",
    "message_received",
    "params_resolved",
    "llm_request",
    "llm_response",
    "tool_exec_start",
    "tool_exec_end",
    "tool_exec_skipped",
    "interceptor_failed",
    "hook_message",
    "tool_set_changed",
    "shadow_decision",
    "call_recorded",
    "sandbox_violation",
    "flow_labeled",
    "flow_flagged",
    "turn_ended",
    "turn_aborted",
    "approval_requested",
    "approval_decided",
    "approval_expired",
    "grant_added",
    "grant_revoked",
    "grant_used",
]

EVENT_KINDS: frozenset[str] = frozenset(EventKind.__args__)  # type: ignore[attr-defined]

_encoder = msgspec.json.Encoder()
_decoder: msgspec.json.Decoder[Event] = msgspec.json.Decoder(Event)


def encode_event(event: Event) -> bytes:
    """Encode an event as JSON (one reused encoder)."""
    return _encoder.encode(event)


def decode_event(data: bytes | str) -> Event:
    """Decode JSON produced by ``encode_event`` back into the event struct."""
    return _decoder.decode(data)
