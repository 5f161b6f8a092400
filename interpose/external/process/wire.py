"""The wire of process hooks: JSON-RPC 2.0, one JSON object per line, in both dialects.

The child speaks JSON-RPC 2.0 on its stdin/stdout, one JSON object per line, as
PicoClaw's process hooks do.  Requests carry the fields of both dialects (interpose's
``name``/``args``/``agent_id``..., PicoClaw's ``tool``/``arguments``/``meta``...) and
replies are accepted in either shape, so that a hook written for any version of
PicoClaw's protocol runs unchanged (PicoClaw's event names live in ``picoclaw.py``).
The protocol reference, with every message and the comparison with upstream, is
docs/process-hooks.md.

This module holds what crosses the pipe (the structs, one encoder/decoder per type,
created once), the actions each hook point accepts, and what a failed call raises
(``ProcessHookError``) and counts (``ProcessHookStats``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeVar

import msgspec

from ...errors import InterposeError
from ...pipeline.payloads import LLMRequest

__all__ = [
    "INTERCEPT_POINTS",
    "PROTOCOL_VERSION",
    "ProcessHookError",
    "ProcessHookStats",
    "ProcessHookTimeout",
]

PROTOCOL_VERSION: Final = 1

#: intercept name -> the hook it is registered on
INTERCEPT_POINTS: Final[Mapping[str, str]] = {
    "before_tool": "tool.before",
    "after_tool": "tool.after",
    "approve_tool": "tool.approve",
    "before_llm": "llm.before",
    "after_llm": "llm.after",
}

PREVIEW: Final = 120  # characters of an offending line quoted in messages


class ProcessHookError(InterposeError):
    """A process hook could not answer a hook call; the message says why.

    The pipeline treats it like any handler exception: the registration's ``on_error``
    applies and ``interceptor_failed`` is published.

    Attributes:
        hook: the process hook's name.
        method: the JSON-RPC method that failed ("" when no call was involved).
        detail: the reason alone, without the hook's name and the method.
    """

    def __init__(self, message: str, *, hook: str, method: str = "", detail: str = "") -> None:
        super().__init__(message)
        self.hook = hook
        self.method = method
        self.detail = detail or message


class ProcessHookTimeout(ProcessHookError, TimeoutError):
    """A process hook did not reply within its timeout (a ``TimeoutError`` too, so that
    the pipeline counts it as one)."""


@dataclass
class ProcessHookStats:
    """Counters of one process hook (``hook.stats``)."""

    starts: int = 0  # children spawned: the first one and every restart
    restarts: int = 0
    requests: int = 0  # hook calls sent, handshakes included
    failed: int = 0  # hook calls that raised ProcessHookError, timeouts included
    timeouts: int = 0
    invalid_lines: int = 0  # stdout lines that are not JSON-RPC messages
    unknown_ids: int = 0  # replies to ids never sent
    late_replies: int = 0  # replies to calls already given up on
    oversized_lines: int = 0  # stdout lines longer than max_line
    ignored: int = 0  # messages from the child that are not replies to calls
    events_sent: int = 0
    events_dropped: int = 0  # observed events not sent: the child was down or unwritable


# -- wire structs (one encoder/decoder per type, created once) -----------------------------


class Request(msgspec.Struct):
    jsonrpc: str
    id: int
    method: str
    params: Any


class RpcError(msgspec.Struct):
    code: int = 0
    message: str = ""
    data: Any = None


class Envelope(msgspec.Struct):
    """Any message from the child: a reply (id + result or error) or something else."""

    jsonrpc: str = "2.0"
    id: int | str | None = None
    method: str | None = None
    result: msgspec.Raw = msgspec.Raw()  # left raw: the waiting call decodes it
    error: RpcError | None = None


# Every request carries the fields of both dialects (see docs/process-hooks.md,
# "Compatibility with PicoClaw"): interpose's (name, args, agent_id, ...) and PicoClaw's
# (tool, arguments, meta, ...), so that a hook written against either reads what it
# expects.  Replies are accepted in either shape.


class HelloParams(msgspec.Struct, kw_only=True):
    protocol_version: int = PROTOCOL_VERSION
    name: str  # PicoClaw's: the hook's name, its protocol version, what it serves
    version: int = PROTOCOL_VERSION
    modes: list[str]


class Meta(msgspec.Struct, kw_only=True):
    """PicoClaw's ``meta`` (its Go field names)."""

    agent_id: str = msgspec.field(name="AgentID")
    turn_id: str = msgspec.field(name="TurnID")
    session_key: str = msgspec.field(name="SessionKey")


class ToolParams(msgspec.Struct, kw_only=True):
    name: str
    args: dict[str, Any]
    call_id: str
    agent_id: str
    session_key: str
    turn_id: str
    tool: str  # PicoClaw: the tool's name and arguments, and meta
    arguments: dict[str, Any]
    meta: Meta


class BeforeToolParams(ToolParams, kw_only=True):
    raw_name: str


class ResultView(msgspec.Struct):
    for_llm: Any
    is_error: bool
    status: str


class AfterToolParams(ToolParams, kw_only=True):
    raw_name: str
    result: ResultView
    duration_ns: int
    duration: int  # PicoClaw's name of duration_ns


class FunctionView(msgspec.Struct):
    name: str
    arguments: str  # a JSON string, as in OpenAI's tool calls


class ToolCallView(msgspec.Struct, kw_only=True):
    """A tool call the model asked for, in interpose's fields and in PicoClaw's
    (OpenAI's) ``{type, function: {name, arguments}}``."""

    id: str
    name: str
    args: dict[str, Any]
    type: str = "function"
    function: FunctionView


class ResponseView(msgspec.Struct, kw_only=True):
    """The LLM response as sent: interpose's fields and PicoClaw's names of them."""

    role: str = "assistant"
    content: str
    tool_calls: list[ToolCallView]
    usage: dict[str, int]
    stop_reason: str
    finish_reason: str


class LLMParams(msgspec.Struct, kw_only=True):
    agent_id: str
    session_key: str
    turn_id: str
    attempt: int
    meta: Meta
    model: str  # PicoClaw: the request's model (from params["model"], "" if unset)


class BeforeLLMParams(LLMParams, kw_only=True):
    request: LLMRequest
    messages: list[dict[str, Any]]  # PicoClaw: the request's fields at the top level
    tools: list[dict[str, Any]]
    options: dict[str, Any]


class AfterLLMParams(LLMParams, kw_only=True):
    request: LLMRequest
    response: ResponseView


Action = Literal[
    "continue", "modify", "respond", "deny_tool", "deny", "abort_turn", "hard_abort", ""
]


class Decision(msgspec.Struct):
    action: Action = "continue"
    reason: str = ""


class HookResult(msgspec.Struct):
    for_llm: Any = msgspec.UNSET
    output: Any = msgspec.UNSET
    is_error: bool | msgspec.UnsetType = msgspec.UNSET


class AfterResult(HookResult):
    """after_tool's ``result``: a tool result, or PicoClaw's whole after_tool record
    with the tool result inside (``{"tool": ..., "result": {"for_llm": ...}}``)."""

    result: HookResult | None = None


class Call(msgspec.Struct):
    """PicoClaw's ``call`` in a before_tool reply."""

    tool: str | None = None
    arguments: dict[str, Any] | None = None


class Reply(msgspec.Struct):
    """What every interceptor reply may carry: interpose's ``decision`` object, or
    PicoClaw's ``action`` and ``reason`` at the top level."""

    decision: Decision | None = None
    action: Action | None = None
    reason: str = ""


class Scope(msgspec.Struct, kw_only=True):
    """PicoClaw's ``scope`` of a runtime event."""

    agent_id: str
    session_key: str
    turn_id: str


class HelloReply(msgspec.Struct, kw_only=True):
    name: str = ""
    protocol_version: int | None = None  # PicoClaw's replies ({"ok": true}) have none
    version: int | None = None


class BeforeToolReply(Reply):
    args: dict[str, Any] | None = None
    call: Call | None = None
    hook_result: HookResult | None = None
    result: HookResult | None = None


class AfterToolReply(Reply):
    result: AfterResult | None = None
    hook_result: HookResult | None = None
    retry: bool = False


class ApproveToolReply(msgspec.Struct, kw_only=True):
    allow: bool | None = None
    approved: bool | None = None  # PicoClaw's name
    reason: str = ""
    ask: bool = False


class LLMRequestView(msgspec.Struct):
    """PicoClaw's ``request`` in a before_llm reply."""

    model: str | None = None
    system: str | None = None
    messages: list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    options: dict[str, Any] | None = None


class BeforeLLMReply(Reply):
    system: str | None = None
    messages: list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    params: dict[str, Any] | None = None
    headers: dict[str, str] | None = None
    request: LLMRequestView | None = None


class LLMResponseView(msgspec.Struct):
    """An LLM response in a reply: interpose's fields, PicoClaw's (``finish_reason``,
    OpenAI-shaped tool calls), or PicoClaw's after_llm record with the response
    inside."""

    content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    usage: dict[str, int] | None = None
    stop_reason: str | None = None
    finish_reason: str | None = None
    response: LLMResponseView | None = None


class AfterLLMReply(Reply):
    content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    usage: dict[str, int] | None = None
    stop_reason: str | None = None
    response: LLMResponseView | None = None
    retry: bool = False


encoder = msgspec.json.Encoder()
envelope: msgspec.json.Decoder[Envelope] = msgspec.json.Decoder(Envelope)
HELLO = msgspec.json.Decoder(HelloReply)
BEFORE_TOOL = msgspec.json.Decoder(BeforeToolReply)
AFTER_TOOL = msgspec.json.Decoder(AfterToolReply)
APPROVE_TOOL = msgspec.json.Decoder(ApproveToolReply)
BEFORE_LLM = msgspec.json.Decoder(BeforeLLMReply)
AFTER_LLM = msgspec.json.Decoder(AfterLLMReply)
EMPTY = b"{}"
NULL = b"null"

R = TypeVar("R")

# which actions each hook point accepts (besides the implicit continue/modify)
ACTIONS: Final[Mapping[str, frozenset[str]]] = {
    "hook.before_tool": frozenset(
        {"continue", "modify", "respond", "deny_tool", "deny", "abort_turn", "hard_abort"}
    ),
    "hook.after_tool": frozenset({"continue", "modify", "abort_turn", "hard_abort"}),
    "hook.before_llm": frozenset({"continue", "modify", "abort_turn", "hard_abort"}),
    "hook.after_llm": frozenset({"continue", "modify", "abort_turn", "hard_abort"}),
}
