"""Process hooks: a long-lived child process that answers hook calls over JSON-RPC 2.0.

The child speaks JSON-RPC 2.0 on its stdin/stdout, one JSON object per line, as
PicoClaw's process hooks do.  Requests carry the fields of both dialects (interpose's
``name``/``args``/``agent_id``..., PicoClaw's ``tool``/``arguments``/``meta``...) and
replies are accepted in either shape, so that a hook written for any version of
PicoClaw's protocol runs unchanged (PicoClaw's event names live in ``picoclaw.py``).
The protocol reference, with every message and the comparison with upstream, is
docs/process-hooks.md.

How a call travels::

    pipeline handler (e.g. ProcessHook._before_tool)
      └─ _ask: encode the request, register a pending slot under a fresh id (and its
         deadline), write the line to the child's stdin, wait for the slot
    the child's stdout: each line (bounded) is decoded as an envelope, the pending slot
    of its id is popped and handed the raw result; the handler decodes the result
    with the struct of its method and maps it onto the decision vocabulary
    timer task (one per child): fail the slots still waiting at their deadline

On asyncio the child's stdin and stdout are pipes connected to asyncio transports: a
request is written in one synchronous call, and the loop hands each chunk of stdout to
a protocol that dispatches the complete lines at once, so a reply wakes its caller
directly.  Under any other anyio backend (trio), anyio's process streams are used, with
a reader task per child.  The registrations carry no pipeline timeout (the hook bounds
its own waits), so a call costs no cancel scope either.

Every failure -- an invalid line, a reply to an unknown id, a result of the wrong type,
a line over ``max_line``, the child exiting, a timeout, a handshake that never comes, a
child that is down -- makes the waiting handler raise ``ProcessHookError`` (a timeout:
``ProcessHookTimeout``, also a ``TimeoutError``), so that the pipeline applies the
registration's ``on_error`` and publishes ``interceptor_failed``, as for any handler
that raises.  Nothing waits without a bound.

The child's life is a small state machine run by one supervisor task per hook::

    spawn ─> handshake ─ok─> ready (serving) ─┐
      ^         └─failed──────────────────────┤ exit, crash, over-long line,
      │                                       │ a timeout with no sign of life
      └──── backoff sleep (min, 2*min, ... max) <─ reap (SIGTERM, then SIGKILL, to
                                                   the child's process group)

While the child is down, calls fail at once with the reason; the backoff resets once a
child has stayed up for ``restart_backoff[1]`` seconds.

The child leads a process group of its own, and the group dies with each generation:
what the child started cannot outlive it.  Its exit is watched directly (see
_process_group.wait_exited), not inferred from EOF alone, since a process it started
may hold its stdout open.  The hook serves the event loop that started it, and a call
from another thread's loop fails at once instead of waiting for a reply that the other
loop receives.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import os
import re
import shutil
import subprocess
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeVar, cast

import anyio
import anyio.abc
import msgspec
from anyio.streams.buffered import BufferedByteReceiveStream

from ..bus.events import Event, encode_event
from ..errors import AbortTurn, ConfigError, HardAbort, InterposeError
from ..pipeline.hooks import ON_ERROR_VALUES, OnError
from ..pipeline.payloads import (
    Approval,
    ApprovalRequest,
    LLMAfterInput,
    LLMAfterOutput,
    LLMBeforeInput,
    LLMRequest,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
    ToolCall,
    ToolResult,
)
from ..pipeline.registry import Interceptor
from ..pipeline.shadow import MODES, Mode
from ..pipeline.tools import ToolMatcher, normalize_tool_name
from ._process_group import kill_group, terminate_group, wait_exited
from .picoclaw import EVENT_METHODS, event_names, resolve_observe, uses_runtime_names

if TYPE_CHECKING:
    from ..pipeline.pipeline import Pipeline

__all__ = [
    "INTERCEPT_POINTS",
    "PROTOCOL_VERSION",
    "ProcessHook",
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

#: variables copied from the parent's environment into the child's, when set
INHERITED_ENV: Final = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SYSTEMROOT")

# On approve_tool the pipeline's timeout (the hook's) ends the wait; the hook's own timer
# backs it up this much later (see ProcessHook.interceptors).
_BACKSTOP = 1.0
_EXIT_WAIT = 1.0  # s: after stdout ends, for the exit code; after the exit, for EOF
_CLOSE_GRACE = 1.0  # s: on close, for the child to exit after its stdin ends
_KILL_WAIT = 1.0  # s: after SIGTERM, then after SIGKILL
_STDERR_GRACE = 0.5  # s: after the child is gone, for the rest of its stderr
_SLACK = 0.01  # s: tolerance when comparing a wait with a timeout
_ABANDONED_KEPT = 1024  # ids given up on, remembered so that their late replies are known
_CLOSING = "the hook is closing"
_PREVIEW = 120  # characters of an offending line quoted in messages
_NAME = re.compile(r"[\w.-]+")
# On asyncio, the child's stdin/stdout are pipes connected to asyncio transports (no
# reader task, no checkpoint per write); elsewhere, anyio's streams and a reader task.
# Tests and the benchmark turn this off to run the portable path under asyncio too; it
# is read when a hook starts, and holds for its restarts.
_ASYNCIO_PIPES = True


def _new_lock() -> anyio.Lock:
    """A lock that takes no checkpoint when it is free (anyio >= 4.5), else a plain one:
    every call takes it once, so the checkpoint would cost each call a loop iteration."""
    try:
        return anyio.Lock(fast_acquire=True)
    except TypeError:  # pragma: no cover - anyio < 4.5
        return anyio.Lock()


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


class _Request(msgspec.Struct):
    jsonrpc: str
    id: int
    method: str
    params: Any


class _RpcError(msgspec.Struct):
    code: int = 0
    message: str = ""
    data: Any = None


class _Envelope(msgspec.Struct):
    """Any message from the child: a reply (id + result or error) or something else."""

    jsonrpc: str = "2.0"
    id: int | str | None = None
    method: str | None = None
    result: msgspec.Raw = msgspec.Raw()  # left raw: the waiting call decodes it
    error: _RpcError | None = None


# Every request carries the fields of both dialects (see docs/process-hooks.md,
# "Compatibility with PicoClaw"): interpose's (name, args, agent_id, ...) and PicoClaw's
# (tool, arguments, meta, ...), so that a hook written against either reads what it
# expects.  Replies are accepted in either shape.


class _HelloParams(msgspec.Struct, kw_only=True):
    protocol_version: int = PROTOCOL_VERSION
    name: str  # PicoClaw's: the hook's name, its protocol version, what it serves
    version: int = PROTOCOL_VERSION
    modes: list[str]


class _Meta(msgspec.Struct, kw_only=True):
    """PicoClaw's ``meta`` (its Go field names)."""

    agent_id: str = msgspec.field(name="AgentID")
    turn_id: str = msgspec.field(name="TurnID")
    session_key: str = msgspec.field(name="SessionKey")


class _ToolParams(msgspec.Struct, kw_only=True):
    name: str
    args: dict[str, Any]
    call_id: str
    agent_id: str
    session_key: str
    turn_id: str
    tool: str  # PicoClaw: the tool's name and arguments, and meta
    arguments: dict[str, Any]
    meta: _Meta


class _BeforeToolParams(_ToolParams, kw_only=True):
    raw_name: str


class _ResultView(msgspec.Struct):
    for_llm: Any
    is_error: bool
    status: str


class _AfterToolParams(_ToolParams, kw_only=True):
    raw_name: str
    result: _ResultView
    duration_ns: int
    duration: int  # PicoClaw's name of duration_ns


class _FunctionView(msgspec.Struct):
    name: str
    arguments: str  # a JSON string, as in OpenAI's tool calls


class _ToolCallView(msgspec.Struct, kw_only=True):
    """A tool call the model asked for, in interpose's fields and in PicoClaw's
    (OpenAI's) ``{type, function: {name, arguments}}``."""

    id: str
    name: str
    args: dict[str, Any]
    type: str = "function"
    function: _FunctionView


class _ResponseView(msgspec.Struct, kw_only=True):
    """The LLM response as sent: interpose's fields and PicoClaw's names of them."""

    role: str = "assistant"
    content: str
    tool_calls: list[_ToolCallView]
    usage: dict[str, int]
    stop_reason: str
    finish_reason: str


class _LLMParams(msgspec.Struct, kw_only=True):
    agent_id: str
    session_key: str
    turn_id: str
    attempt: int
    meta: _Meta
    model: str  # PicoClaw: the request's model (from params["model"], "" if unset)


class _BeforeLLMParams(_LLMParams, kw_only=True):
    request: LLMRequest
    messages: list[dict[str, Any]]  # PicoClaw: the request's fields at the top level
    tools: list[dict[str, Any]]
    options: dict[str, Any]


class _AfterLLMParams(_LLMParams, kw_only=True):
    request: LLMRequest
    response: _ResponseView


Action = Literal[
    "continue", "modify", "respond", "deny_tool", "deny", "abort_turn", "hard_abort", ""
]


class _Decision(msgspec.Struct):
    action: Action = "continue"
    reason: str = ""


class _HookResult(msgspec.Struct):
    for_llm: Any = msgspec.UNSET
    output: Any = msgspec.UNSET
    is_error: bool | msgspec.UnsetType = msgspec.UNSET


class _AfterResult(_HookResult):
    """after_tool's ``result``: a tool result, or PicoClaw's whole after_tool record
    with the tool result inside (``{"tool": ..., "result": {"for_llm": ...}}``)."""

    result: _HookResult | None = None


class _Call(msgspec.Struct):
    """PicoClaw's ``call`` in a before_tool reply."""

    tool: str | None = None
    arguments: dict[str, Any] | None = None


class _Reply(msgspec.Struct):
    """What every interceptor reply may carry: interpose's ``decision`` object, or
    PicoClaw's ``action`` and ``reason`` at the top level."""

    decision: _Decision | None = None
    action: Action | None = None
    reason: str = ""


class _Scope(msgspec.Struct, kw_only=True):
    """PicoClaw's ``scope`` of a runtime event."""

    agent_id: str
    session_key: str
    turn_id: str


class _HelloReply(msgspec.Struct, kw_only=True):
    name: str = ""
    protocol_version: int | None = None  # PicoClaw's replies ({"ok": true}) have none
    version: int | None = None


class _BeforeToolReply(_Reply):
    args: dict[str, Any] | None = None
    call: _Call | None = None
    hook_result: _HookResult | None = None
    result: _HookResult | None = None


class _AfterToolReply(_Reply):
    result: _AfterResult | None = None
    hook_result: _HookResult | None = None
    retry: bool = False


class _ApproveToolReply(msgspec.Struct, kw_only=True):
    allow: bool | None = None
    approved: bool | None = None  # PicoClaw's name
    reason: str = ""
    ask: bool = False


class _LLMRequestView(msgspec.Struct):
    """PicoClaw's ``request`` in a before_llm reply."""

    model: str | None = None
    system: str | None = None
    messages: list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    options: dict[str, Any] | None = None


class _BeforeLLMReply(_Reply):
    system: str | None = None
    messages: list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    params: dict[str, Any] | None = None
    headers: dict[str, str] | None = None
    request: _LLMRequestView | None = None


class _LLMResponseView(msgspec.Struct):
    """An LLM response in a reply: interpose's fields, PicoClaw's (``finish_reason``,
    OpenAI-shaped tool calls), or PicoClaw's after_llm record with the response
    inside."""

    content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    usage: dict[str, int] | None = None
    stop_reason: str | None = None
    finish_reason: str | None = None
    response: _LLMResponseView | None = None


class _AfterLLMReply(_Reply):
    content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    usage: dict[str, int] | None = None
    stop_reason: str | None = None
    response: _LLMResponseView | None = None
    retry: bool = False


_encoder = msgspec.json.Encoder()
_envelope: msgspec.json.Decoder[_Envelope] = msgspec.json.Decoder(_Envelope)
_HELLO = msgspec.json.Decoder(_HelloReply)
_BEFORE_TOOL = msgspec.json.Decoder(_BeforeToolReply)
_AFTER_TOOL = msgspec.json.Decoder(_AfterToolReply)
_APPROVE_TOOL = msgspec.json.Decoder(_ApproveToolReply)
_BEFORE_LLM = msgspec.json.Decoder(_BeforeLLMReply)
_AFTER_LLM = msgspec.json.Decoder(_AfterLLMReply)
_EMPTY = b"{}"
_NULL = b"null"

R = TypeVar("R")

# which actions each hook point accepts (besides the implicit continue/modify)
_ACTIONS: Final[Mapping[str, frozenset[str]]] = {
    "hook.before_tool": frozenset(
        {"continue", "modify", "respond", "deny_tool", "deny", "abort_turn", "hard_abort"}
    ),
    "hook.after_tool": frozenset({"continue", "modify", "abort_turn", "hard_abort"}),
    "hook.before_llm": frozenset({"continue", "modify", "abort_turn", "hard_abort"}),
    "hook.after_llm": frozenset({"continue", "modify", "abort_turn", "hard_abort"}),
}


# -- one child process ----------------------------------------------------------------------


class _Event(Protocol):
    """What a call waits on: anyio.Event, or asyncio.Event on the asyncio path."""

    def set(self) -> None: ...
    def is_set(self) -> bool: ...
    async def wait(self) -> Any: ...


class _Pending:
    """A call waiting for its reply: the reader fills ``result`` or ``error`` (the
    timer: ``timed_out``) and sets ``done``."""

    __slots__ = (
        "done",
        "error",
        "method",
        "replies",
        "result",
        "sent",
        "stuck_after",
        "timed_out",
        "within",
    )

    def __init__(
        self,
        done: _Event,
        method: str,
        sent: float,
        replies: int,
        within: float,
        stuck_after: float,
    ) -> None:
        self.done = done
        self.method = method
        self.sent = sent
        self.replies = replies  # the child's reply count when it was sent
        self.within = within
        self.stuck_after = stuck_after
        self.result: msgspec.Raw | None = None
        self.error = ""
        self.timed_out = False


class _StreamInput:
    """The child's stdin as anyio's byte stream (any backend): one writer at a time."""

    __slots__ = ("lock", "stream")

    def __init__(self, stream: anyio.abc.ByteSendStream) -> None:
        self.stream = stream
        self.lock = _new_lock()

    async def send(self, line: bytes, deadline: float) -> None:
        with anyio.fail_at(deadline):  # a child that stops reading fills the pipe
            async with self.lock:  # lines never interleave
                await self.stream.send(line)

    async def aclose(self) -> None:
        await self.stream.aclose()


class _PipeInput(asyncio.Protocol):
    """The child's stdin as an asyncio pipe transport: a line is written in one
    synchronous call, so lines never interleave and sending does not yield to the
    loop -- unless the pipe is full, and then only until it drains or the deadline."""

    def __init__(self) -> None:
        self.transport: asyncio.WriteTransport | None = None
        self.lost = False
        self.drained: anyio.Event | None = None  # while writing is paused

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (uvloop's transports do not derive from asyncio's classes: no isinstance)
        self.transport = cast(asyncio.WriteTransport, transport)

    def pause_writing(self) -> None:
        self.drained = anyio.Event()

    def resume_writing(self) -> None:
        drained, self.drained = self.drained, None
        if drained is not None:
            drained.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.resume_writing()

    async def send(self, line: bytes, deadline: float) -> None:
        transport = self.transport
        if self.lost or transport is None or transport.is_closing():
            raise anyio.BrokenResourceError
        transport.write(line)
        drained = self.drained
        if drained is not None:
            with anyio.fail_at(deadline):
                await drained.wait()
            if self.lost:
                raise anyio.BrokenResourceError

    async def aclose(self) -> None:
        if self.transport is not None:
            self.transport.close()  # what is buffered is still written, then EOF


class _PipeOutput(asyncio.Protocol):
    """The child's stdout as an asyncio pipe transport: the loop hands over the bytes as
    they arrive and each complete line goes straight to ``on_line`` -- no reader task, so
    a reply wakes its caller one loop iteration sooner.

    ``on_line(line)`` returns False to stop reading; a line longer than ``limit`` calls
    ``on_overflow()`` and stops reading.  ``closed`` is set when the pipe is closed (the
    child closed its stdout, or reading stopped).
    """

    def __init__(
        self,
        on_line: Callable[[bytes], bool],
        on_overflow: Callable[[], None],
        limit: int,
    ) -> None:
        self.on_line = on_line
        self.on_overflow = on_overflow
        self.limit = limit
        self.closed = anyio.Event()
        self.transport: asyncio.ReadTransport | None = None
        self.partial = bytearray()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (uvloop's transports do not derive from asyncio's classes: no isinstance)
        self.transport = cast(asyncio.ReadTransport, transport)

    def data_received(self, data: bytes) -> None:
        partial = self.partial  # the start of a line that has not ended yet
        if partial:
            partial += data
            if b"\n" not in data:
                if len(partial) > self.limit:
                    self.on_overflow()
                    self.close()
                return
            data = bytes(partial)
            partial.clear()
        start = 0
        on_line = self.on_line
        while (end := data.find(b"\n", start)) >= 0:
            if not on_line(data[start:end]):  # on_line checks the length too
                self.close()
                return
            start = end + 1
        if start < len(data):
            partial += data[start:]
            if len(partial) > self.limit:
                self.on_overflow()
                self.close()

    def close(self) -> None:
        self.partial.clear()
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()


class _Child:
    """One generation of the hook's process and the state of its conversation."""

    __slots__ = (
        "abandoned",
        "clock",
        "deadlines",
        "end_reason",
        "ended",
        "event",
        "input",
        "output",
        "pending",
        "proc",
        "ready",
        "ready_at",
        "replies",
        "stderr_done",
        "stderr_tail",
    )

    def __init__(
        self,
        proc: anyio.abc.Process,
        input: _StreamInput | _PipeInput,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self.proc = proc
        self.input = input
        # what each call waits on, and the clock of its deadline: asyncio's own on the
        # asyncio path (anyio's wrappers cost a microsecond or so per call), else anyio's
        self.event: Callable[[], _Event] = anyio.Event if loop is None else asyncio.Event
        self.clock: Callable[[], float] = anyio.current_time if loop is None else loop.time
        # the stdout protocol on asyncio; None: a reader task reads proc.stdout
        self.output: _PipeOutput | None = None
        self.pending: dict[int, _Pending] = {}
        # (deadline, id) of the calls, one queue per timeout: sent in order, so each queue
        # is sorted; entries of answered calls are dropped lazily (see ProcessHook._expire)
        self.deadlines: dict[float, deque[tuple[float, int]]] = {}
        # ids given up on (timed out, cancelled, failed): their replies are late, not stray
        self.abandoned: dict[int, None] = {}
        self.ready = False
        self.ready_at = 0.0
        self.replies = 0  # replies received so far: a call that sees none since it was
        # sent, for its whole timeout, finds the child stuck
        self.ended = anyio.Event()
        self.end_reason = ""
        self.stderr_done = anyio.Event()
        self.stderr_tail: deque[str] = deque(maxlen=5)

    async def send(self, line: bytes, deadline: float, hook: str, method: str) -> None:
        """Write one line, waiting for a full pipe to drain until ``deadline``.

        Raises:
            ProcessHookError: the process has exited or closed its stdin.
            TimeoutError: the pipe stayed full until ``deadline``.
        """
        try:
            await self.input.send(line, deadline)
        except TimeoutError:  # an OSError, but not a broken pipe
            raise
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise ProcessHookError(
                f"process hook {hook!r}: {method}: cannot write to the process "
                f"({type(exc).__name__}); it has exited or closed its stdin",
                hook=hook,
                method=method,
            ) from exc

    def abandon(self, rid: int) -> None:
        self.abandoned[rid] = None
        if len(self.abandoned) > _ABANDONED_KEPT:
            del self.abandoned[next(iter(self.abandoned))]

    def fail_pending(self, detail: str) -> None:
        """Fail every waiting call with ``detail``."""
        failed = list(self.pending.items())
        self.pending.clear()  # in place: the reader and the timer hold this dict
        for rid, slot in failed:
            slot.error = detail
            slot.done.set()
            self.abandon(rid)

    def stop(self, reason: str) -> None:
        """End this generation: fail the waiting calls; the supervisor reaps it."""
        if self.ended.is_set():
            return
        self.ready = False
        self.end_reason = reason
        self.fail_pending(reason)
        self.ended.set()

    def close_pipes(self) -> None:
        """Close the asyncio pipe transports, if any (the process is gone: what is still
        buffered for its stdin is dropped)."""
        if isinstance(self.input, _PipeInput):
            transport = self.input.transport
            # one already closing is left alone: it ends once its buffer is written or
            # the write fails on the dead process's pipe (abort would end it twice)
            if transport is not None and not transport.is_closing():
                transport.abort()
        if self.output is not None:
            self.output.close()


# -- the hook -------------------------------------------------------------------------------


class ProcessHook:
    """A hook served by a long-lived child process over JSON-RPC 2.0 (one JSON object per
    line on its stdin/stdout), compatible with PicoClaw's process hooks.

    ``install(pipe)`` registers one interceptor per intercepted point (ids
    ``process:<name>:<point>``), subscribes the child to the observed events and adds the
    hook as a pipeline service: the child starts with ``async with pipe`` and stops when
    it ends.

    Args:
        name: the hook's name (letters, digits, ``_ . -``); it names the interceptors,
            the logger ``interpose.process.<name>`` and every error.
        command: the program and its arguments (not a shell string).
        intercept: hook points served: before_tool, after_tool, approve_tool,
            before_llm, after_llm.
        observe: events sent to the child as notifications: interpose's event kinds,
            PicoClaw's names of them (``agent.tool.exec_start``, ``turn_end``), or
            ``*`` for every event; PicoClaw events interpose does not have are accepted
            and listed in ``never_observed``.
        tools: tool matcher of the tool points (as ``Interceptor.tool_matcher``).
        agents: agent matcher (a regex on agent_id).
        priority: priority of every interceptor (higher runs first).
        on_error: policy when the child fails to answer: "block" (fail closed; on the
            llm points, which cannot block, the error propagates as with "raise"),
            "skip" (fail open) or "raise".
        timeout: seconds to wait for each reply.
        handshake_timeout: seconds to wait for the reply to ``hook.hello``.
        max_line: longest stdout line accepted, in bytes.
        env: variables added to the child's minimal environment (see ``INHERITED_ENV``).
        cwd: the child's working directory.
        restart_backoff: (first, longest) delay in seconds before restarting a child
            that died; it doubles per consecutive restart.
        event_method: ``"hook.event"`` or ``"hook.runtime_event"`` (PicoClaw's current
            method); unset: ``hook.runtime_event`` when ``observe`` is written in
            PicoClaw's runtime names (``agent.*``), else ``hook.event``.
        trusted: a ``respond`` from its before_tool skips the approvers (see
            ``Interceptor.trusted``).
        mode: ``"shadow"``: the child is asked as usual, its answers are recorded
            (``shadow_decision`` events) and not enforced; its failures never affect
            the call.

    Raises:
        ConfigError: (a ``ValueError``) an invalid argument: unknown intercept point or
            event kind, empty command, a command that cannot be found, a non-positive
            timeout, and so on; the message names the hook and the argument.
    """

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        *,
        intercept: Iterable[str] = ("before_tool",),
        observe: Iterable[str] = (),
        tools: ToolMatcher | None = None,
        agents: str | None = None,
        priority: int = 0,
        on_error: OnError = "block",
        timeout: float = 5.0,
        handshake_timeout: float = 5.0,
        max_line: int = 1 << 20,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        restart_backoff: tuple[float, float] = (0.1, 5.0),
        event_method: str | None = None,
        trusted: bool = False,
        mode: Mode = "enforce",
    ) -> None:
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ConfigError(
                f"process hook name must be letters, digits, '_', '.' or '-', got {name!r}"
            )
        where = f"process hook {name!r}"
        self.name = name
        if env is not None and not (
            isinstance(env, Mapping)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
        ):
            raise ConfigError(f"{where}: env must map str to str")
        self.env: dict[str, str] = dict(env or {})
        if cwd is not None and not isinstance(cwd, str):
            raise ConfigError(f"{where}: cwd must be a str, got {cwd!r}")
        self.cwd = cwd
        self.command = _check_command(where, command, self.env, cwd)
        points = _names(intercept, where, "intercept")
        for point in points:
            if point not in INTERCEPT_POINTS:
                raise ConfigError(
                    f"{where}: intercept: unknown hook point {point!r}; "
                    f"expected one of {', '.join(INTERCEPT_POINTS)}"
                )
        names = _names(observe, where, "observe")
        kinds, never = resolve_observe(names, where)
        if not points and not names:
            raise ConfigError(f"{where}: it neither intercepts nor observes anything")
        self.intercept: tuple[str, ...] = points
        #: the interpose event kinds sent to the child
        self.observe: tuple[str, ...] = kinds
        #: names in ``observe`` PicoClaw knows but interpose has no event for: never sent
        self.never_observed: tuple[str, ...] = never
        if event_method is None:
            event_method = "hook.runtime_event" if uses_runtime_names(names) else "hook.event"
        if event_method not in EVENT_METHODS:
            raise ConfigError(
                f"{where}: event_method must be one of {', '.join(EVENT_METHODS)}, "
                f"got {event_method!r}"
            )
        self.event_method: str = event_method
        self._event_method = event_method.encode()
        if not isinstance(trusted, bool):
            raise ConfigError(f"{where}: trusted must be a bool, got {trusted!r}")
        self.trusted = trusted
        if mode not in MODES:
            raise ConfigError(f"{where}: mode must be 'enforce' or 'shadow', got {mode!r}")
        self.mode: Mode = mode
        if on_error not in ON_ERROR_VALUES:
            raise ConfigError(
                f"{where}: on_error must be 'block', 'skip' or 'raise', got {on_error!r}"
            )
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise ConfigError(f"{where}: priority must be an int, got {priority!r}")
        if agents is not None and not isinstance(agents, str):
            raise ConfigError(f"{where}: agents must be a regex string, got {agents!r}")
        self.tools = tools
        self.agents = agents
        self.priority = priority
        self.on_error: OnError = on_error
        self.timeout = _positive(where, "timeout", timeout)
        self.handshake_timeout = _positive(where, "handshake_timeout", handshake_timeout)
        if not isinstance(max_line, int) or isinstance(max_line, bool) or max_line < 64:
            raise ConfigError(
                f"{where}: max_line must be an int of at least 64 bytes, got {max_line!r}"
            )
        self.max_line = max_line
        try:
            low, high = restart_backoff
        except (TypeError, ValueError):
            raise ConfigError(
                f"{where}: restart_backoff must be (first, longest) seconds, "
                f"got {restart_backoff!r}"
            ) from None
        _positive(where, "restart_backoff[0]", low)
        _positive(where, "restart_backoff[1]", high)
        if low > high:
            raise ConfigError(f"{where}: restart_backoff: first delay {low} exceeds longest {high}")
        self.restart_backoff = (float(low), float(high))
        self.stats = ProcessHookStats()
        modes = [] if not kinds else ["observe"]
        for served_mode, served in (
            ("llm", ("before_llm", "after_llm")),
            ("tool", ("before_tool", "after_tool")),
            ("approve", ("approve_tool",)),
        ):
            if any(point in points for point in served):
                modes.append(served_mode)
        self._hello = _HelloParams(name=name, modes=modes)
        #: the name the child gave in its handshake reply ("" before the first one)
        self.child_name = ""
        self._log = logging.getLogger(f"interpose.process.{name}")
        self._ids = iter(range(1, 1 << 62))
        self._child: _Child | None = None
        self._started = False
        self._closing = False
        self._down = "not started"
        self._next_start = 0.0
        # loop-bound objects are made in start(): the hook can run again under a new loop
        self._ready: anyio.Event | None = None
        self._wake: anyio.Event | None = None
        self._stopped: anyio.Event | None = None
        self._scope: anyio.CancelScope | None = None
        # the running asyncio loop when the children talk over asyncio pipes, else None
        # (another backend, or the portable path forced): chosen once per start()
        self._loop: asyncio.AbstractEventLoop | None = None
        # the thread whose event loop started the hook: its children, events and pipes
        # belong to that loop, and a call from another loop would wait on them forever
        self._thread: int | None = None
        self._thread_name = ""

    def __repr__(self) -> str:
        state = "running" if self.running else self._why_down()
        return f"<ProcessHook {self.name!r} {self.command!r} {state}>"

    # -- state --------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether a child is up and has answered its handshake."""
        child = self._child
        return child is not None and child.ready

    @property
    def pid(self) -> int | None:
        """The current child's process id (None when there is none)."""
        child = self._child
        return None if child is None or child.ended.is_set() else child.proc.pid

    @property
    def in_flight(self) -> int:
        """How many hook calls are waiting for their reply."""
        child = self._child
        return 0 if child is None else len(child.pending)

    async def wait_ready(self) -> None:
        """Wait until a child has answered its handshake (at once if one has).  Bound
        it with ``anyio.fail_after``: a child that never comes up is waited for forever.

        Raises:
            ProcessHookError: the hook is not started, or it is closed meanwhile, or it
                was started by the event loop of another thread.
        """
        if self._started and self._thread != threading.get_ident():
            raise self._foreign_thread("")
        while not self.running:
            if not self._started or self._closing or self._ready is None:
                raise ProcessHookError(
                    f"process hook {self.name!r} is {'closed' if self._closing else 'not started'}",
                    hook=self.name,
                )
            await self._ready.wait()

    # -- registration -------------------------------------------------------------

    def interceptors(self) -> list[Interceptor]:
        """The registrations of the intercepted points, ids ``process:<name>:<point>``,
        ``source="process:<name>"``.

        The hook bounds its own waits (its timer task, and the deadline of each write),
        so the registrations have no pipeline timeout (``math.inf``): no cancel scope per
        call.  On approve_tool the pipeline's timeout is ``timeout``, so that a late
        answer is a deny that names the approver (the pipeline's rule for late
        approvers); the hook's own timer backs it up a second later.
        """
        handlers: dict[str, Callable[..., Awaitable[Any]]] = {
            "before_tool": self._before_tool,
            "after_tool": self._after_tool,
            "approve_tool": self._approve_tool,
            "before_llm": self._before_llm,
            "after_llm": self._after_llm,
        }
        regs = []
        for point in self.intercept:
            hook = INTERCEPT_POINTS[point]
            tool_point = hook.startswith("tool.")
            on_error: OnError = self.on_error
            if not tool_point and on_error == "block":
                on_error = "raise"  # the llm points cannot block: fail closed by raising
            regs.append(
                Interceptor(
                    id=f"process:{self.name}:{point}",
                    hook=hook,
                    handler=handlers[point],
                    priority=self.priority,
                    tool_matcher=self.tools if tool_point else None,
                    agent_matcher=self.agents,
                    on_error=on_error,
                    timeout=self.timeout if point == "approve_tool" else math.inf,
                    trusted=self.trusted and point == "before_tool",
                    source=f"process:{self.name}",
                    mode=self.mode,
                )
            )
        return regs

    def install(self, pipe: Pipeline) -> None:
        """Register the interceptors on ``pipe``, subscribe the child to the observed
        events, and add the hook as a service (started and closed with the pipeline).

        Raises:
            RegistrationError: an interceptor was rejected (e.g. a tool matcher that
                matches no known tool, an id already taken); nothing is left registered.
            RuntimeError: the pipeline is already entered.
        """
        added: list[str] = []
        try:
            for reg in self.interceptors():
                pipe.registry.add(reg)
                added.append(reg.id)
            pipe.add_service(self)
        except BaseException:
            for id in added:
                pipe.registry.remove(id)
            raise
        if self.observe:
            pipe.subscribe(self._observe, events=self.observe, name=f"process:{self.name}")

    # -- lifecycle (the pipeline's Service protocol) --------------------------------

    async def start(self, tg: anyio.abc.TaskGroup) -> None:
        """Spawn the child and greet it; returns once the handshake succeeded or failed
        (a failed one is retried with backoff in the background; calls fail meanwhile).

        Raises:
            ProcessHookError: the command cannot be started at all (not found, not
                executable).
            RuntimeError: the hook is already running.
        """
        if self._started:
            raise RuntimeError(f"process hook {self.name!r} is already running")
        self._closing = False
        self._ready = anyio.Event()
        self._wake = anyio.Event()
        self._stopped = anyio.Event()
        self._down = ""
        self._loop = _asyncio_loop() if _ASYNCIO_PIPES else None
        self._thread = threading.get_ident()
        self._thread_name = threading.current_thread().name
        first = await self._spawn()
        self._started = True
        try:
            await tg.start(self._supervise, first)
        except BaseException:
            self._started = False
            raise

    async def aclose(self) -> None:
        """Stop the child: close its stdin, give it a moment to exit, then terminate and
        kill it; calls still waiting fail.  Bounded in time; idempotent."""
        if not self._started:
            return
        self._closing = True
        self._down = "closed"
        assert self._wake is not None
        assert self._stopped is not None
        assert self._ready is not None
        child = self._child
        if child is not None:
            child.stop(_CLOSING)
        self._wake.set()
        self._ready.set()  # wake wait_ready() callers: they raise
        with anyio.move_on_after(_CLOSE_GRACE + 2 * _KILL_WAIT + _STDERR_GRACE + 1):
            await self._stopped.wait()
        if self._scope is not None:
            self._scope.cancel()
        self._started = False

    def _why_down(self) -> str:
        child = self._child
        if child is None:
            return self._down  # not started, closed, or it could not be spawned
        if child.end_reason:
            return child.end_reason
        return "starting: waiting for the reply to hook.hello"

    def _reset_ready(self) -> None:
        """The child went down: later wait_ready() calls wait for the next one."""
        if self._ready is not None and self._ready.is_set() and not self._closing:
            self._ready = anyio.Event()

    async def _spawn(self) -> _Child:
        loop = self._loop
        try:
            # shielded: a process half-started when a cancel arrives would be orphaned
            with anyio.CancelScope(shield=True):
                if loop is None:
                    proc = await self._open_process()
                    assert proc.stdin is not None
                    child = _Child(proc, _StreamInput(proc.stdin))
                else:
                    child = await self._spawn_piped(loop)
        except OSError as exc:
            detail = f"cannot start {self.command[0]!r}: {exc}"
            raise ProcessHookError(
                f"process hook {self.name!r}: {detail}", hook=self.name, detail=detail
            ) from exc
        self.stats.starts += 1
        self._log.debug("process hook %r: started pid %s", self.name, child.proc.pid)
        return child

    async def _open_process(
        self, stdin: int = subprocess.PIPE, stdout: int = subprocess.PIPE
    ) -> anyio.abc.Process:
        return await anyio.open_process(
            list(self.command),
            stdin=stdin,
            stdout=stdout,
            cwd=self.cwd,
            env=self._child_env(),
            start_new_session=True,
        )

    async def _spawn_piped(self, loop: asyncio.AbstractEventLoop) -> _Child:
        """Start the child on pipes of our own, connected to asyncio transports (the
        fast path: see _PipeInput and _PipeOutput); its stderr stays an anyio stream."""
        child_in, to_child = os.pipe()
        from_child, child_out = os.pipe()
        try:
            proc = await self._open_process(stdin=child_in, stdout=child_out)
        except BaseException:
            os.close(to_child)
            os.close(from_child)
            raise
        finally:
            os.close(child_in)  # the child holds its own copies now
            os.close(child_out)
        input = _PipeInput()
        child = _Child(proc, input, loop)
        output = _PipeOutput(
            functools.partial(self._take_line, child),
            functools.partial(self._oversized, child),
            self.max_line,
        )
        # the transports own the files (and close the descriptors) from here on
        writer = os.fdopen(to_child, "wb", buffering=0)
        reader = os.fdopen(from_child, "rb", buffering=0)
        try:
            await loop.connect_write_pipe(lambda: input, writer)
            await loop.connect_read_pipe(lambda: output, reader)
        except BaseException:
            proc.kill()
            child.close_pipes()
            writer.close()
            reader.close()
            raise
        child.output = output
        return child

    def _child_env(self) -> dict[str, str]:
        env = {key: os.environ[key] for key in INHERITED_ENV if key in os.environ}
        env.setdefault("PATH", os.defpath)
        env.update(self.env)
        return env

    async def _supervise(
        self, first: _Child, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        assert self._wake is not None
        assert self._stopped is not None
        low, high = self.restart_backoff
        delay = low
        child: _Child | None = first
        status = task_status
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                while True:
                    if child is not None:
                        self._child = child
                        await self._serve(child, status)
                        status = anyio.TASK_STATUS_IGNORED
                        if child.ready_at and anyio.current_time() - child.ready_at >= high:
                            delay = low  # it was up long enough: start the backoff over
                    if self._closing:
                        return
                    self._next_start = anyio.current_time() + delay
                    self._log.warning(
                        "process hook %r is down (%s); restarting in %.3gs",
                        self.name,
                        self._why_down(),
                        delay,
                    )
                    with anyio.move_on_after(delay):
                        await self._wake.wait()
                    if self._closing:
                        return
                    delay = min(delay * 2, high)
                    try:
                        child = await self._spawn()
                    except ProcessHookError as exc:
                        child = self._child = None
                        self._down = exc.detail
                    else:
                        self.stats.restarts += 1
        finally:
            self._stopped.set()

    async def _serve(self, child: _Child, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Run one generation: its reader and stderr tasks, the handshake, then wait for
        its end and reap it."""
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._pump_stderr, child)
                if child.output is None:
                    tg.start_soon(self._read, child)
                else:
                    tg.start_soon(self._watch_output, child, child.output)
                tg.start_soon(self._expire, child)
                tg.start_soon(self._watch_exit, child)
                if self._closing:
                    child.stop(_CLOSING)
                else:
                    await self._handshake(child)
                task_status.started()
                await child.ended.wait()
                self._reset_ready()
                await self._reap(child)
                with anyio.move_on_after(_STDERR_GRACE):
                    await child.stderr_done.wait()
                tg.cancel_scope.cancel()
        finally:
            child.close_pipes()
            with anyio.CancelScope(shield=True), anyio.move_on_after(_KILL_WAIT):
                await child.proc.aclose()
        if child.proc.returncode not in (None, 0) and child.stderr_tail:
            self._log.warning(
                "process hook %r: last lines of its stderr: %s",
                self.name,
                " | ".join(child.stderr_tail),
            )

    async def _handshake(self, child: _Child) -> None:
        method = "hook.hello"
        try:
            raw = await self._request(child, method, self._hello, self.handshake_timeout, math.inf)
            reply = self._decode(_HELLO, raw, method)
            # PicoClaw's replies carry no version ({"ok": true, "name": ...}); one that
            # names a version must name ours
            for key, version in (
                ("protocol_version", reply.protocol_version),
                ("version", reply.version),
            ):
                if version is not None and version != PROTOCOL_VERSION:
                    raise self._error(
                        method,
                        f"the child speaks {key} {version}, this side speaks {PROTOCOL_VERSION}",
                    )
        except ProcessHookError as exc:
            self.stats.failed += 1
            child.stop(f"handshake failed: {exc.detail}")
            return
        if child.ended.is_set():
            return
        child.ready = True
        child.ready_at = anyio.current_time()
        self.child_name = reply.name
        assert self._ready is not None
        self._ready.set()
        self._log.info(
            "process hook %r is up: pid %s, it calls itself %r",
            self.name,
            child.proc.pid,
            reply.name,
        )

    async def _reap(self, child: _Child) -> None:
        """Make sure the process and its process group are gone: close its stdin (on
        close, give it a moment to exit by itself), then SIGTERM the group, then SIGKILL
        it, each wait bounded.  The SIGKILL goes out even when the child has exited by
        then: what it started (and left in its group) dies with this generation."""
        proc = child.proc
        with anyio.CancelScope(shield=True):
            try:
                await child.input.aclose()
            except (OSError, anyio.BrokenResourceError):
                pass
            if proc.returncode is None and self._closing:
                with anyio.move_on_after(_CLOSE_GRACE):
                    await wait_exited(proc)
            if proc.returncode is None:
                terminate_group(proc)
                with anyio.move_on_after(_KILL_WAIT):
                    await wait_exited(proc)
            kill_group(proc)
            if proc.returncode is None:
                with anyio.move_on_after(_KILL_WAIT):
                    await wait_exited(proc)

    async def _pump_stderr(self, child: _Child) -> None:
        """Forward the child's stderr, line by line, to the hook's logger (INFO)."""
        stderr = child.proc.stderr
        assert stderr is not None
        stream = BufferedByteReceiveStream(stderr)
        log = self._log
        try:
            while True:
                try:
                    data = await stream.receive_until(b"\n", self.max_line)
                except anyio.DelimiterNotFound:
                    data = await stream.receive(self.max_line)  # log it in pieces
                except anyio.IncompleteRead:
                    data = stream.buffer
                    if data:
                        await stream.receive(len(data))
                        self._log_stderr(child, data, log)
                    return
                self._log_stderr(child, data, log)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return
        finally:
            child.stderr_done.set()

    def _log_stderr(self, child: _Child, data: bytes, log: logging.Logger) -> None:
        text = data.decode("utf-8", "replace").rstrip("\r")
        child.stderr_tail.append(text[:_PREVIEW])
        log.info("%s", text)

    # -- the conversation -----------------------------------------------------------

    async def _read(self, child: _Child) -> None:
        """The reader task of the portable path: read lines until stdout ends."""
        stdout = child.proc.stdout
        assert stdout is not None
        stream = BufferedByteReceiveStream(stdout)
        limit = self.max_line
        take_line = self._take_line
        try:
            while True:
                if not take_line(child, await stream.receive_until(b"\n", limit)):
                    return
        except anyio.DelimiterNotFound:
            self._oversized(child)
            return
        except (
            anyio.IncompleteRead,
            anyio.EndOfStream,
            anyio.ClosedResourceError,
            anyio.BrokenResourceError,
        ):
            pass
        await self._output_ended(child)

    async def _watch_output(self, child: _Child, output: _PipeOutput) -> None:
        """The asyncio path's stand-in for the reader task: wait for stdout to close."""
        await output.closed.wait()
        await self._output_ended(child)

    async def _output_ended(self, child: _Child) -> None:
        """The child's stdout ended: end the generation, with its exit code if it has
        one by now."""
        if child.ended.is_set():
            return
        code = child.proc.returncode
        if code is None:
            with anyio.move_on_after(_EXIT_WAIT):
                code = await wait_exited(child.proc)
        child.stop("the process closed its stdout" if code is None else _exit_reason(code))

    async def _watch_exit(self, child: _Child) -> None:
        """End the generation when the process exits, even if its stdout stays open.

        A process the child started inherits its stdout; when the child exits, that
        process keeps the pipe open, so no EOF would tell that the child is gone and the
        calls would wait for their timeouts.  Killing the child's process group closes
        the pipe: the reader then delivers the replies the child wrote before it exited
        and, at EOF, ends the generation with its exit code.
        """
        code = await wait_exited(child.proc)
        if child.ended.is_set():
            return  # it was stopped first: _reap ends its group
        kill_group(child.proc)
        with anyio.move_on_after(_EXIT_WAIT):  # a process that left the group may hold it
            await child.ended.wait()
        child.stop(_exit_reason(code))

    def _take_line(self, child: _Child, line: bytes) -> bool:
        """Handle one line of the child's stdout; False: stop reading (it is done for)."""
        if child.ended.is_set() and child.end_reason == _CLOSING:
            # closing: drain what it still writes (PicoClaw-style hooks answer the last
            # notifications too) so that it sees its stdin end, not a broken pipe
            return True
        try:
            self._on_line(child, line)
        except Exception as exc:  # a bug here must not take the pipeline down
            self._log.exception("process hook %r: cannot process a line", self.name)
            child.stop(f"internal error while reading its output: {exc!r}")
        # a child told to close may still write (replies to the last events, say): keep
        # reading until it exits, or its writes fail with a broken pipe
        return not child.ended.is_set() or self._closing

    def _oversized(self, child: _Child) -> None:
        self.stats.oversized_lines += 1
        reason = f"a line on its stdout is longer than max_line ({self.max_line} bytes)"
        self._log.warning("process hook %r: %s; restarting it", self.name, reason)
        child.stop(reason)

    def _on_line(self, child: _Child, line: bytes) -> None:
        if len(line) > self.max_line:  # found in one read, past the limit
            self._oversized(child)
            return
        try:
            msg = _envelope.decode(line)
        except msgspec.ValidationError as exc:
            if not line.strip():
                return
            self._garbage(child, line, f"not a JSON-RPC message: {exc}")
            return
        except msgspec.DecodeError as exc:
            if not line.strip():
                return
            self._garbage(child, line, f"reply is not valid JSON: {exc}")
            return
        except UnicodeDecodeError as exc:  # msgspec checks UTF-8 where it makes a str
            self._garbage(child, line, f"reply is not valid UTF-8: {_bad_utf8(exc)}")
            return
        rid = msg.id
        slot = child.pending.pop(rid, None) if type(rid) is int and msg.method is None else None
        if slot is None:
            self._stray(child, msg)
            return
        child.replies += 1
        if msg.error is not None:
            error = msg.error
            slot.error = f"the child answered with error {error.code}: {error.message}"
        elif not len(msg.result):
            slot.error = "the reply has neither result nor error"
        else:
            slot.result = msg.result
        slot.done.set()

    def _garbage(self, child: _Child, line: bytes, detail: str) -> None:
        """A line that is not a JSON-RPC message: it may have been meant for any of the
        waiting calls, so they all fail (better than each waiting for its timeout)."""
        self.stats.invalid_lines += 1
        detail = f"{detail}, in {_preview(line)}"
        self._log.warning("process hook %r: %s", self.name, detail)
        child.fail_pending(detail)

    def _stray(self, child: _Child, msg: _Envelope) -> None:
        """A message that answers no waiting call."""
        rid = msg.id
        if msg.method is not None:
            # a request or notification from the child: nothing is served that way
            self.stats.ignored += 1
            self._log.debug("process hook %r: ignored %s from the child", self.name, msg.method)
        elif rid is None:
            # a reply to a notification (PicoClaw's review_gate.py answers hook.event)
            self.stats.ignored += 1
            if msg.error is not None:
                self._log.warning(
                    "process hook %r: the child reported error %s: %s",
                    self.name,
                    msg.error.code,
                    msg.error.message,
                )
        elif type(rid) is int and rid in child.abandoned:
            self.stats.late_replies += 1
            child.replies += 1
            self._log.info(
                "process hook %r: late reply to request %s, already given up on", self.name, rid
            )
        else:
            # meant for one of the waiting calls, but which one cannot be told
            self.stats.unknown_ids += 1
            detail = f"reply to unknown id {rid!r} (no request was sent with it)"
            self._log.warning("process hook %r: %s", self.name, detail)
            child.fail_pending(detail)

    async def _request(
        self, child: _Child, method: str, params: object, within: float, stuck_after: float
    ) -> msgspec.Raw:
        """Send one request to ``child`` and wait up to ``within`` seconds for its raw
        result (the timer task, ``_expire``, ends the wait: no cancel scope per call).

        ``stuck_after``: a call left unanswered this long, or until the caller's own
        deadline, with no reply of any kind since it was sent, means that the child is
        stuck: it is restarted.

        Raises:
            ProcessHookError: the request failed (see the message).
            ProcessHookTimeout: no reply within ``within`` seconds.
        """
        rid = next(self._ids)
        try:
            line = _encoder.encode(_Request("2.0", rid, method, params)) + b"\n"
        except (TypeError, ValueError, msgspec.EncodeError) as exc:
            raise self._error(method, f"cannot encode the request: {exc}") from exc
        sent = child.clock()
        slot = _Pending(child.event(), method, sent, child.replies, within, stuck_after)
        pending = child.pending
        pending[rid] = slot
        queue = child.deadlines.get(within)
        if queue is None:
            queue = child.deadlines[within] = deque()
        queue.append((sent + within, rid))
        self.stats.requests += 1
        try:
            await child.send(line, sent + within, self.name, method)
            await slot.done.wait()
        except TimeoutError:  # the pipe stayed full: the child does not read its stdin
            slot.timed_out = True
            slot.error = (
                f"the request could not be written within {within:g}s "
                "(the process does not read its stdin)"
            )
        finally:
            if not slot.done.is_set():  # cancelled, or the line could not be written
                pending.pop(rid, None)
                child.abandon(rid)
                # cancelled by the caller's timeout (the pipeline's, on approvers), which
                # began a moment before `sent`: the same as our own timeout
                if child.clock() - sent >= stuck_after - _SLACK:
                    self.stats.timeouts += 1
                    if child.replies == slot.replies:
                        child.stop(
                            f"no reply to {method} within {stuck_after:g}s and no other "
                            "reply since: the process is stuck"
                        )
            # keep the queue short: drop the answered calls at its head
            while queue and queue[0][1] not in pending:
                queue.popleft()
        if slot.result is not None:
            return slot.result
        if slot.timed_out:
            detail = slot.error or f"no reply within {within:g}s"
            raise ProcessHookTimeout(
                f"process hook {self.name!r}: {method}: {detail}",
                hook=self.name,
                method=method,
                detail=detail,
            )
        raise self._error(method, slot.error)

    async def _expire(self, child: _Child) -> None:
        """The timer of ``child``'s calls: fail each one still waiting at its deadline.

        It sleeps until the earliest deadline, or for the shortest timeout in use when
        nothing waits; a call sent meanwhile has a deadline at least that far away, so
        the timer never needs waking.
        """
        period = min(self.timeout, self.handshake_timeout)
        pending = child.pending
        while True:
            now = anyio.current_time()
            wake = now + period
            for queue in child.deadlines.values():
                while queue:
                    deadline, rid = queue[0]
                    slot = pending.get(rid)
                    if slot is not None and deadline > now:
                        wake = min(wake, deadline)
                        break
                    queue.popleft()
                    if slot is not None:
                        self._expired(child, rid, slot)
            await anyio.sleep(wake - now)

    def _expired(self, child: _Child, rid: int, slot: _Pending) -> None:
        child.pending.pop(rid, None)
        child.abandon(rid)
        self.stats.timeouts += 1
        slot.timed_out = True
        slot.done.set()
        if child.replies == slot.replies and slot.within >= slot.stuck_after:
            child.stop(
                f"no reply to {slot.method} within {slot.within:g}s and no other reply "
                "since: the process is stuck"
            )

    async def _ask(self, method: str, params: object, decoder: msgspec.json.Decoder[R]) -> R:
        """One hook call to the current child, decoded with ``decoder``.

        Raises:
            ProcessHookError: the child is down, the call failed (see the message), or it
                comes from another thread than the one whose event loop started the hook.
        """
        child = self._child
        try:
            if self._thread != threading.get_ident() and self._started:
                raise self._foreign_thread(method)
            if child is None or not child.ready:
                raise self._unavailable(method)
            # approvals run under the pipeline's timeout (see interceptors()); ours backs it up
            timeout = self.timeout + _BACKSTOP if method == "hook.approve_tool" else self.timeout
            raw = await self._request(child, method, params, timeout, self.timeout)
            return self._decode(decoder, raw, method)
        except ProcessHookError:
            self.stats.failed += 1
            raise

    def _decode(self, decoder: msgspec.json.Decoder[R], raw: msgspec.Raw, method: str) -> R:
        data = raw if bytes(raw) != _NULL else _EMPTY  # a null result means "nothing to say"
        try:
            return decoder.decode(data)
        except msgspec.DecodeError as exc:
            raise self._error(method, f"invalid reply: {exc}") from exc
        except UnicodeDecodeError as exc:
            # the result is left raw by the reader, so its strings are checked only now:
            # an invalid line all the same, answering only this call
            self.stats.invalid_lines += 1
            detail = f"reply is not valid UTF-8: {_bad_utf8(exc)}"
            self._log.warning("process hook %r: %s: %s", self.name, method, detail)
            raise self._error(method, detail) from exc

    def _error(self, method: str, detail: str) -> ProcessHookError:
        return ProcessHookError(
            f"process hook {self.name!r}: {method}: {detail}",
            hook=self.name,
            method=method,
            detail=detail,
        )

    def _foreign_thread(self, method: str) -> ProcessHookError:
        detail = (
            f"called from thread {threading.current_thread().name!r}, but the hook runs in "
            f"the event loop of thread {self._thread_name!r}, which entered its pipeline; "
            "its child answers only there: call the pipeline from that loop (from another "
            "thread with anyio.from_thread.run or asyncio.run_coroutine_threadsafe), or "
            "give each thread's event loop a pipeline of its own"
        )
        where = f"process hook {self.name!r}: {method}" if method else f"process hook {self.name!r}"
        return ProcessHookError(f"{where}: {detail}", hook=self.name, method=method, detail=detail)

    def _unavailable(self, method: str) -> ProcessHookError:
        if not self._started:
            why = (
                "is closed"
                if self._closing
                else "is not started (enter the pipeline it is installed on: `async with pipe`)"
            )
        else:
            why = f"is not running ({self._why_down()})"
            wait = self._next_start - anyio.current_time()
            if not self._closing and wait > 0:
                why += f"; next start in {wait:.2g}s"
            elif not self._closing and self._child is not None and self._child.end_reason:
                why += "; it is being restarted"
        return ProcessHookError(f"process hook {self.name!r} {why}", hook=self.name, method=method)

    def _check_action(self, method: str, decision: _Decision) -> str:
        action = decision.action or "continue"  # PicoClaw: an empty action continues
        if action not in _ACTIONS[method]:
            raise self._fail(method, f"action {action!r} does not apply to {method}")
        if action == "abort_turn":
            raise AbortTurn(decision.reason or f"turn aborted by process hook {self.name!r}")
        if action == "hard_abort":
            raise HardAbort(decision.reason or f"stopped by process hook {self.name!r}")
        return action

    def _decision(self, method: str, reply: _Reply) -> tuple[str | None, bool]:
        """(the reply's action after _check_action, or None when it gives none; whether
        it is PicoClaw's flat shape, whose data sent alongside ``continue`` applies too,
        as in PicoClaw)."""
        if reply.decision is not None and reply.action is not None:
            raise self._fail(method, "give decision or action, not both")
        if reply.action is not None:
            return self._check_action(method, _Decision(reply.action, reply.reason)), True
        if reply.decision is not None:
            return self._check_action(method, reply.decision), False
        return None, False

    def _one(self, method: str, what: str, first: R | None, second: R | None) -> R | None:
        """Of two fields that say the same thing in the two dialects, the one given."""
        if first is not None and second is not None:
            raise self._fail(method, f"give {what}, not both")
        return first if first is not None else second

    # -- the handlers -----------------------------------------------------------------

    async def _before_tool(self, inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        method = "hook.before_tool"
        meta = _Meta(agent_id=inp.agent_id, turn_id=inp.turn_id, session_key=inp.session_key)
        params = _BeforeToolParams(
            name=inp.tool_name,
            args=out.args,
            call_id=inp.tool_call_id,
            agent_id=inp.agent_id,
            session_key=inp.session_key,
            turn_id=inp.turn_id,
            raw_name=inp.raw_name,
            tool=inp.tool_name,
            arguments=out.args,
            meta=meta,
        )
        reply = await self._ask(method, params, _BEFORE_TOOL)
        action, flat = self._decision(method, reply)
        call = reply.call
        if call is not None and call.tool is not None:
            tool = normalize_tool_name(call.tool)
            if tool not in (inp.tool_name, normalize_tool_name(inp.raw_name)):
                raise self._fail(
                    method,
                    f"call.tool {call.tool!r}: a hook cannot turn a call of "
                    f"{inp.tool_name!r} into a call of another tool",
                )
        args = self._one(
            method, "args or call.arguments", reply.args, None if call is None else call.arguments
        )
        # {"args": ...} alone is the seed's pass-through or rewrite; interpose's nested
        # continue ignores args sent alongside, PicoClaw's flat one applies them
        applies = action not in ("deny_tool", "deny") and (flat or action != "continue")
        if args is not None and applies:
            out.args = args
        if action == "respond":
            result = self._one(method, "hook_result or result", reply.hook_result, reply.result)
            if result is None:
                raise self._fail(method, "action 'respond' needs a hook_result (or result)")
            output, is_error = self._result(method, result)
            out.result = ToolResult(output=output, is_error=bool(is_error), status="responded")
        elif action in ("deny_tool", "deny"):
            out.block = True
            reason = reply.reason if flat else (reply.decision or _Decision()).reason
            out.block_reason = reason or f"denied by process hook {self.name!r}"

    async def _after_tool(self, inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        method = "hook.after_tool"
        current = (
            out.result if isinstance(out.result, ToolResult) else ToolResult(output=out.result)
        )
        params = _AfterToolParams(
            name=inp.tool_name,
            args=inp.args,
            call_id=inp.tool_call_id,
            agent_id=inp.agent_id,
            session_key=inp.session_key,
            turn_id=inp.turn_id,
            raw_name=inp.raw_name,
            result=_ResultView(current.output, current.is_error, current.status),
            duration_ns=inp.duration_ns,
            tool=inp.tool_name,
            arguments=inp.args,
            meta=_Meta(agent_id=inp.agent_id, turn_id=inp.turn_id, session_key=inp.session_key),
            duration=inp.duration_ns,
        )
        reply = await self._ask(method, params, _AFTER_TOOL)
        action, flat = self._decision(method, reply)
        if action is None or flat:
            action = "modify"  # a result given alongside PicoClaw's continue applies too
        new: _HookResult | None = self._one(
            method, "result or hook_result", reply.result, reply.hook_result
        )
        if isinstance(new, _AfterResult) and new.result is not None:
            # PicoClaw's whole record: the tool result is inside it
            if new.for_llm is not msgspec.UNSET or new.output is not msgspec.UNSET:
                raise self._fail(method, "give result.for_llm or result.result, not both")
            new = new.result
        if action == "modify" and new is not None:
            output, is_error = self._result(method, new)
            if is_error is msgspec.UNSET:
                is_error = current.is_error
            status = current.status
            if status in ("ok", "error"):
                status = "error" if is_error else "ok"
            out.result = ToolResult(
                output=output, is_error=bool(is_error), status=status, details=dict(current.details)
            )
        if reply.retry:
            out.retry = True

    async def _approve_tool(self, request: ApprovalRequest) -> Approval:
        method = "hook.approve_tool"
        params = _ToolParams(
            name=request.tool_name,
            args=request.args,
            call_id=request.tool_call_id,
            agent_id=request.agent_id,
            session_key=request.session_key,
            turn_id=request.turn_id,
            tool=request.tool_name,
            arguments=request.args,
            meta=_Meta(
                agent_id=request.agent_id,
                turn_id=request.turn_id,
                session_key=request.session_key,
            ),
        )
        reply = await self._ask(method, params, _APPROVE_TOOL)
        if reply.ask:
            return Approval.ask(reply.reason)
        if None not in (reply.allow, reply.approved) and reply.allow != reply.approved:
            raise self._fail(method, "allow and approved disagree")
        allowed = reply.allow if reply.allow is not None else reply.approved
        if allowed:
            return Approval.allow(reply.reason)
        if allowed is None and not reply.reason:
            # as in PicoClaw, a reply without a decision is a deny
            return Approval.deny(f"process hook {self.name!r} gave no decision (allow/approved)")
        return Approval.deny(reply.reason or f"denied by process hook {self.name!r}")

    async def _before_llm(self, inp: LLMBeforeInput, out: LLMRequest) -> None:
        method = "hook.before_llm"
        model = out.params.get("model", "")
        params = _BeforeLLMParams(
            agent_id=inp.agent_id,
            session_key=inp.session_key,
            turn_id=inp.turn_id,
            attempt=inp.attempt,
            meta=_Meta(agent_id=inp.agent_id, turn_id=inp.turn_id, session_key=inp.session_key),
            model=model if isinstance(model, str) else str(model),
            request=out,
            messages=out.messages,
            tools=out.tools,
            options=out.params,
        )
        reply = await self._ask(method, params, _BEFORE_LLM)
        action, flat = self._decision(method, reply)
        if action == "continue" and not flat:
            return
        view = reply.request
        if view is not None:
            if any(
                value is not None
                for value in (reply.system, reply.messages, reply.tools, reply.params)
            ):
                raise self._fail(method, "give request or its fields at the top level, not both")
            system, messages, tools = view.system, view.messages, view.tools
            new_params = view.options
            if view.model and view.model != params.model:
                new_params = {**(out.params if new_params is None else new_params)}
                new_params["model"] = view.model
        else:
            system, messages, tools = reply.system, reply.messages, reply.tools
            new_params = reply.params
        if system is not None:
            out.system = system
        if messages is not None:
            out.messages = messages
        if tools is not None:
            out.tools = tools
        if new_params is not None:
            out.params = new_params
        if reply.headers is not None:
            out.headers = reply.headers

    async def _after_llm(self, inp: LLMAfterInput, out: LLMAfterOutput) -> None:
        method = "hook.after_llm"
        response = out.response
        model = inp.request.params.get("model", "")
        params = _AfterLLMParams(
            agent_id=inp.agent_id,
            session_key=inp.session_key,
            turn_id=inp.turn_id,
            attempt=inp.attempt,
            meta=_Meta(agent_id=inp.agent_id, turn_id=inp.turn_id, session_key=inp.session_key),
            model=model if isinstance(model, str) else str(model),
            request=inp.request,
            response=_ResponseView(
                content=response.content,
                tool_calls=[
                    _ToolCallView(
                        id=call.id,
                        name=call.name,
                        args=call.args,
                        function=_FunctionView(call.name, _encoder.encode(call.args).decode()),
                    )
                    for call in response.tool_calls
                ],
                usage=response.usage,
                stop_reason=response.stop_reason,
                finish_reason=response.stop_reason,
            ),
        )
        reply = await self._ask(method, params, _AFTER_LLM)
        action, flat = self._decision(method, reply)
        if action is None or action == "modify" or flat:
            view = reply.response
            if view is not None and view.response is not None:
                view = view.response  # PicoClaw's whole record: the response is inside
            if view is not None:
                if any(
                    value is not None
                    for value in (reply.content, reply.tool_calls, reply.usage, reply.stop_reason)
                ):
                    raise self._fail(
                        method, "give response or its fields at the top level, not both"
                    )
                content, calls, usage = view.content, view.tool_calls, view.usage
                stop = self._stop_reason(method, view, response.stop_reason)
            else:
                content, calls, usage = reply.content, reply.tool_calls, reply.usage
                stop = reply.stop_reason
            if content is not None:
                response.content = content
            if calls is not None:
                response.tool_calls = self._tool_calls(method, calls)
            if usage is not None:
                response.usage = usage
            if stop is not None:
                response.stop_reason = stop
        if reply.retry:
            out.retry = True

    def _stop_reason(self, method: str, view: _LLMResponseView, sent: str) -> str | None:
        """The stop reason of a response in a reply: an echoed record carries both
        names (as sent); the one the hook changed wins."""
        changed = {
            value for value in (view.stop_reason, view.finish_reason) if value not in (None, sent)
        }
        if len(changed) > 1:
            raise self._fail(method, "stop_reason and finish_reason disagree")
        if changed:
            return changed.pop()
        return view.stop_reason if view.stop_reason is not None else view.finish_reason

    def _tool_calls(self, method: str, calls: list[dict[str, Any]]) -> list[ToolCall]:
        """Tool calls of a reply, in interpose's shape (``{id, name, args}``) or
        OpenAI's (``{id, type, function: {name, arguments}}``, arguments a JSON string
        or an object)."""
        converted = []
        for i, call in enumerate(calls):
            function = call.get("function")
            try:
                if isinstance(function, dict):
                    arguments = function.get("arguments", {})
                    if isinstance(arguments, str):
                        arguments = msgspec.json.decode(arguments) if arguments.strip() else {}
                    name = function.get("name")
                    call = {"id": call.get("id", ""), "name": name, "args": arguments}
                converted.append(msgspec.convert(call, ToolCall))
            except (msgspec.ValidationError, msgspec.DecodeError) as exc:
                raise self._fail(method, f"tool_calls[{i}]: {exc}") from None
        return converted

    def _result(self, method: str, result: _HookResult) -> tuple[Any, bool | msgspec.UnsetType]:
        """(output, is_error) of a hook_result: ``for_llm`` (PicoClaw's name) or ``output``."""
        if result.for_llm is not msgspec.UNSET and result.output is not msgspec.UNSET:
            raise self._fail(method, "give for_llm or output in a result, not both")
        if result.for_llm is not msgspec.UNSET:
            return result.for_llm, result.is_error
        if result.output is not msgspec.UNSET:
            return result.output, result.is_error
        raise self._fail(method, "a result needs for_llm (or output)")

    def _fail(self, method: str, detail: str) -> ProcessHookError:
        """A reply that decodes but makes no sense: counted as a failed call."""
        self.stats.failed += 1
        return self._error(method, f"invalid reply: {detail}")

    # -- observed events ------------------------------------------------------------

    async def _observe(self, event: Event) -> None:
        """Send one event to the child as a notification (no reply), ``hook.event`` or
        ``hook.runtime_event`` (``event_method``), its fields under every name a hook
        of either dialect reads: ``type``/``data`` (interpose's and the seed's),
        ``kind``/``scope``/``payload`` (PicoClaw's runtime event), ``Kind``/``Meta``/
        ``Payload`` (PicoClaw's first hook.event)."""
        child = self._child
        if child is None or not child.ready:
            self.stats.events_dropped += 1
            return
        data = encode_event(event)
        runtime, legacy = event_names(event.kind)
        scope = _encoder.encode(
            _Scope(agent_id=event.agent_id, session_key=event.session_key, turn_id=event.turn_id)
        )
        meta = _encoder.encode(
            _Meta(agent_id=event.agent_id, turn_id=event.turn_id, session_key=event.session_key)
        )
        line = (
            b'{"jsonrpc":"2.0","method":"%s","params":{"type":"%s","data":%s,"kind":"%s",'
            b'"scope":%s,"payload":%s,"Kind":"%s","Meta":%s,"Payload":%s}}\n'
            % (
                self._event_method,
                event.kind.encode(),
                data,
                runtime.encode(),
                scope,
                data,
                legacy.encode(),
                meta,
                data,
            )
        )
        try:
            await child.send(line, anyio.current_time() + self.timeout, self.name, "hook.event")
        except (ProcessHookError, TimeoutError):
            self.stats.events_dropped += 1  # the reader sees the exit and restarts it
            return
        self.stats.events_sent += 1


# -- helpers --------------------------------------------------------------------------------


def _asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop, or None under another backend (trio)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _names(values: Iterable[str], where: str, what: str) -> tuple[str, ...]:
    if isinstance(values, str):
        raise ConfigError(f"{where}: {what} must be a list of names, not the string {values!r}")
    names: list[str] = []
    for value in values:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: {what}: expected names, got {value!r}")
        if value not in names:
            names.append(value)
    return tuple(names)


def _positive(where: str, what: str, value: object) -> float:
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigError(f"{where}: {what} must be a positive number of seconds, got {value!r}")
    return float(value)


def _check_command(
    where: str, command: Sequence[str], env: Mapping[str, str] | None, cwd: str | None
) -> tuple[str, ...]:
    """Validate the argv and that its program exists (on the child's PATH, or as a path
    relative to ``cwd``)."""
    if isinstance(command, str | bytes):
        raise ConfigError(
            f"{where}: command must be a list of arguments (the program first), "
            f"not the string {command!r}"
        )
    argv = tuple(command)
    if not argv:
        raise ConfigError(f"{where}: command is empty")
    if not all(isinstance(arg, str) for arg in argv):
        raise ConfigError(f"{where}: command arguments must be strings, got {argv!r}")
    program = argv[0]
    if os.sep in program or (os.altsep is not None and os.altsep in program):
        path = os.path.join(cwd or os.curdir, program)  # as the OS will resolve it
        if not os.path.isfile(path):
            raise ConfigError(f"{where}: command {program!r} not found ({path} is not a file)")
        if not os.access(path, os.X_OK):
            raise ConfigError(f"{where}: command {program!r} is not executable ({path})")
    else:
        search = (env or {}).get("PATH") or os.environ.get("PATH") or os.defpath
        if shutil.which(program, path=search) is None:
            raise ConfigError(f"{where}: command {program!r} not found on PATH ({search})")
    return argv


def _exit_reason(code: int) -> str:
    if code < 0:
        return f"the process was killed by signal {-code}"
    return f"the process exited with code {code}"


def _bad_utf8(exc: UnicodeDecodeError) -> str:
    bad = exc.object[exc.start : exc.end]
    return f"{exc.reason} ({' '.join(f'{b:#04x}' for b in bad[:4])})"


def _preview(line: bytes) -> str:
    text = line[:_PREVIEW].decode("utf-8", "replace")
    return repr(text) + ("..." if len(line) > _PREVIEW else "")
