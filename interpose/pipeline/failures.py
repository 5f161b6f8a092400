"""Where a handler failed: its name, where it is defined, where it raised.

A ``Fault`` is made only when a handler fails (the loops do nothing for a handler that
returns), and read by everything that reports the failure: the log line, the
``interceptor_failed`` event, and the details of the result it blocked
(``details["failure"]``).  The reason the agent reads stays what it always was:
``interceptor '<id>' failed: <ExcType>: <msg>``.

A ``tool.before`` or ``command.before`` failure that blocks is reported by the stage,
which builds the refusal from ``out.block_reason``: the policy leaves a
``FailureReason`` there, a ``str`` that also holds its ``Fault``, and ``blocked``
turns it into the refusal with the failure in its details.

``Failures`` is a pipeline's failure policy and counters: every stage hands it a
handler's failure, and it counts it (``PipelineStats``), logs it once (the traceback
only when debugging), publishes ``interceptor_failed`` for whoever listens, and
applies the handler's ``on_error`` to the stage's output.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import itertools
import logging
import os
import time
from types import CodeType
from typing import TYPE_CHECKING, Any

from .._locations import relative_location
from ..bus import events as ev
from .chain import Step, describe
from .hooks import OnError
from .payloads import ToolAfterOutput, ToolResult, refusal

if TYPE_CHECKING:
    from ..bus.memory import InMemoryBus, Subscription

__all__ = [
    "FailureReason",
    "Failures",
    "Fault",
    "PipelineStats",
    "blocked",
    "debug_env",
    "relative_location",
]

log = logging.getLogger("interpose")


@dataclasses.dataclass(frozen=True, slots=True)
class Fault:
    """One failure of one handler, located.

    Attributes:
        handler: the handler's qualified name, with its module (``app.guards.no_rm``);
            the function a decorator wrapped (``functools.wraps``), the method of a
            bound method, the class of a callable object.
        defined_at: ``file:line`` where the handler is defined ("" when it has no
            Python code, a builtin say).
        raised_at: ``file:line`` of the frame that raised, the innermost of the
            traceback ("" for a deadline that passed: the handler raised nothing).
        error_type: the exception's class name.
        error: ``<ExcType>: <message>`` (a deadline: ``TimeoutError: timed out after
            <t>s``).
    """

    handler: str
    defined_at: str
    raised_at: str
    error_type: str
    error: str

    @classmethod
    def of(cls, handler: object, exc: BaseException, error: str, *, deadline: bool) -> Fault:
        """Locate the failure ``exc`` of ``handler``; ``error`` describes it,
        ``deadline`` says that ``exc`` is the handler's deadline passing (raised by
        the pipeline, not by the handler)."""
        target = _unwrapped(handler)
        code = _code(target)
        return cls(
            handler=_name(target),
            defined_at=f"{code.co_filename}:{code.co_firstlineno}" if code is not None else "",
            raised_at="" if deadline else _raised_at(exc),
            error_type=type(exc).__name__,
            error=error,
        )

    def details(self) -> dict[str, str]:
        """The fields as a dict: ``details["failure"]`` of a blocked result."""
        return {
            "handler": self.handler,
            "defined_at": self.defined_at,
            "raised_at": self.raised_at,
            "error_type": self.error_type,
            "error": self.error,
        }

    def where(self) -> str:
        """``handler <name> (<file:line>), raised at <file:line>``, for a log line:
        the files under the working directory named relative to it."""
        text = f"handler {self.handler}"
        if self.defined_at:
            text += f" ({relative_location(self.defined_at)})"
        if self.raised_at:
            text += f", raised at {relative_location(self.raised_at)}"
        return text


class FailureReason(str):
    """A block reason written by a failure policy: the text, and its ``fault``."""

    fault: Fault

    def __new__(cls, text: str, fault: Fault) -> FailureReason:
        reason = super().__new__(cls, text)
        reason.fault = fault
        return reason


def blocked(tool: str, reason: str, decided_by: str) -> ToolResult:
    """The refusal of a call that a before-hook blocked with ``reason``; when a
    failure policy blocked it, its details hold the failure (``details["failure"]``)."""
    if type(reason) is FailureReason:
        return refusal(
            "blocked", tool, str(reason), decided_by=decided_by, failure=reason.fault.details()
        )
    return refusal("blocked", tool, reason, decided_by=decided_by)


def debug_env() -> bool:
    """Whether ``INTERPOSE_DEBUG`` asks for tracebacks (1, true, yes, on)."""
    return os.environ.get("INTERPOSE_DEBUG", "").strip().lower() in ("1", "true", "yes", "on")


def _unwrapped(handler: object) -> object:
    """The user's own callable behind decorators, partials and bound methods."""
    seen = 0
    while seen < 100:  # bounded: a __wrapped__ cycle must not hang a failure report
        seen += 1
        if isinstance(handler, functools.partial):
            handler = handler.func
        elif inspect.ismethod(handler):
            handler = handler.__func__
        elif getattr(handler, "__wrapped__", None) is not None:
            handler = handler.__wrapped__  # type: ignore[attr-defined]
        else:
            break
    return handler


def _code(fn: object) -> CodeType | None:
    code = getattr(fn, "__code__", None)
    if isinstance(code, CodeType):
        return code
    if not inspect.isroutine(fn) and not isinstance(fn, type):
        # a callable object: where its class's __call__ is defined
        call: Any = getattr(type(fn), "__call__", None)  # noqa: B004 - the method itself
        code = getattr(call, "__code__", None)
        if isinstance(code, CodeType):
            return code
    return None


def _name(fn: object) -> str:
    named = fn if inspect.isroutine(fn) or isinstance(fn, type) else type(fn)
    qualname = getattr(named, "__qualname__", None) or type(named).__qualname__
    module = getattr(named, "__module__", None)
    return f"{module}.{qualname}" if module else str(qualname)


def _raised_at(exc: BaseException) -> str:
    tb = exc.__traceback__
    if tb is None:
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    return f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}"


# -- the policy and the counters -------------------------------------------------------


class PipelineStats:
    """Failure counters: per registration id, and how many were timeouts."""

    __slots__ = ("failures", "timeouts")

    def __init__(self) -> None:
        self.failures: dict[str, int] = {}
        self.timeouts: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"PipelineStats(failures={self.failures}, timeouts={self.timeouts})"


class Failures:
    """A pipeline's failure policy and counters, handed to every stage.

    ``bus`` gets the ``interceptor_failed`` events (numbered from ``seq``, the
    pipeline's event counter); ``debug`` logs each failure's traceback.
    """

    __slots__ = ("bus", "debug", "hinted", "seq", "stats")

    def __init__(self, bus: InMemoryBus, seq: itertools.count[int], debug: bool) -> None:
        self.bus = bus
        self.seq = seq
        self.debug = debug
        self.hinted = False  # a failure's log line said how to get tracebacks
        self.stats = PipelineStats()

    def debugging(self) -> bool:
        """Whether failures are logged with their traceback: ``debug=True``, or
        ``INTERPOSE_DEBUG=1`` (also true, yes, on) in the environment now."""
        return self.debug or debug_env()

    async def hook_failed(self, step: Step, exc: Exception, inp: Any, out: Any) -> OnError:
        """A handler raised: publish it (waiting for room in a full ``block`` buffer),
        then count, log and apply its policy as ``settle`` does."""
        fault = _fault(step, exc)
        if "interceptor_failed" in self.bus.wanted:
            await self.publish(step, exc, fault, inp)
        return self._apply(step, exc, inp, out, fault)

    def settle(self, step: Step, exc: Exception, inp: Any, out: Any) -> OnError:
        """A handler of a loop of sync handlers raised (they run without a coroutine):
        publish it at once (the bus's ``publish_now``: past a full ``block`` buffer,
        never lost), count and log it, apply its policy to ``out``, return the policy;
        re-raises for "raise"."""
        fault = _fault(step, exc)
        if "interceptor_failed" in self.bus.wanted:
            self.bus.publish_now(self.failed_event(step, exc, fault, inp))
        return self._apply(step, exc, inp, out, fault)

    def _apply(self, step: Step, exc: Exception, inp: Any, out: Any, fault: Fault) -> OnError:
        tool = _subject(inp)
        self.count(step, exc, tool, fault)
        if step.on_error == "raise":
            raise exc
        if step.on_error == "block":
            reason = f"interceptor '{step.id}' failed: {fault.error}"
            if isinstance(out, ToolAfterOutput):
                out.result = refusal(
                    "blocked", tool, reason, decided_by=step.id, failure=fault.details()
                )
            else:
                # the stage builds the refusal from the reason (failures.blocked)
                out.block, out.block_reason = True, FailureReason(reason, fault)
        return step.on_error

    async def layer_failed(self, step: Step, exc: Exception, ctx: Any) -> OnError:
        """A middleware layer raised: count, log and publish it, apply its policy to
        ``ctx`` (a blocked result for "block"); re-raises for "raise"."""
        fault = await self.record(step, exc, Where.of_context(ctx))
        if step.on_error == "raise":
            raise exc
        if step.on_error == "block":
            ctx.result = refusal(
                "blocked",
                _subject(ctx),
                f"middleware '{step.id}' failed: {fault.error}",
                decided_by=step.id,
                failure=fault.details(),
            )
        return step.on_error

    async def record(self, step: Step, exc: Exception, where: Any) -> Fault:
        """Count, log and publish a handler failure; returns where it happened.
        ``where`` names the call: turn_id, agent_id, session_key, tool_name,
        tool_call_id (a tool.before input, an approval request, a ``Where``)."""
        fault = _fault(step, exc)
        self.count(step, exc, where.tool_name, fault)
        if "interceptor_failed" in self.bus.wanted:
            await self.publish(step, exc, fault, where)
        return fault

    def count(self, step: Step, exc: Exception, tool_name: str, fault: Fault) -> None:
        """Count and log one failure of ``step``."""
        stats = self.stats
        stats.failures[step.id] = stats.failures.get(step.id, 0) + 1
        if isinstance(exc, TimeoutError):
            stats.timeouts[step.id] = stats.timeouts.get(step.id, 0) + 1
        debug = self.debugging()
        # the first failure's line says how to see tracebacks; the next ones need not
        hint = not (debug or self.hinted)
        self.hinted = True
        log.warning(
            "%s '%s' failed (%s, policy %s): %s [%s]%s",
            step.hook,
            step.id,
            tool_name or "-",
            step.on_error,
            fault.error,
            fault.where(),
            " (INTERPOSE_DEBUG=1 logs the traceback)" if hint else "",
            exc_info=exc if debug else None,
        )

    async def publish(self, step: Step, exc: Exception, fault: Fault, about: Any) -> None:
        """Publish the ``interceptor_failed`` of ``step``; ``about`` is the hook input
        or the ``Where`` of the call it failed in."""
        await self.bus.publish(self.failed_event(step, exc, fault, about))

    def failed_event(
        self, step: Step, exc: Exception, fault: Fault, about: Any
    ) -> ev.InterceptorFailed:
        """The ``interceptor_failed`` of ``step`` (see ``publish``)."""
        return ev.InterceptorFailed(
            ts=time.time_ns(),
            seq=next(self.seq),
            turn_id=about.turn_id,
            agent_id=about.agent_id,
            session_key=about.session_key,
            hook=step.hook,
            interceptor_id=step.id,
            error_type=fault.error_type,
            error=fault.error,
            policy=step.on_error,
            timed_out=isinstance(exc, TimeoutError),
            tool_name=_subject(about),
            tool_call_id=getattr(about, "tool_call_id", ""),
            handler=fault.handler,
            defined_at=fault.defined_at,
            raised_at=fault.raised_at,
        )

    def observer_failed(
        self, sub: Subscription, event: Any, exc: Exception, timed_out: bool
    ) -> None:
        """An observer failed (the bus's ``failure_hook``): count it, publish it."""
        key = f"observer:{sub.name}"
        self.stats.failures[key] = self.stats.failures.get(key, 0) + 1
        if timed_out:
            self.stats.timeouts[key] = self.stats.timeouts.get(key, 0) + 1
        if event.kind == "interceptor_failed" and event.hook == "observer":
            return  # never report a failure about reporting a failure
        if "interceptor_failed" in self.bus.wanted:
            self.bus.publish_now(
                ev.InterceptorFailed(
                    ts=time.time_ns(),
                    seq=next(self.seq),
                    turn_id=event.turn_id,
                    agent_id=event.agent_id,
                    session_key=event.session_key,
                    hook="observer",
                    interceptor_id=sub.name,
                    error_type=type(exc).__name__,
                    error=str(exc) or type(exc).__name__,
                    policy="skip",
                    timed_out=timed_out,
                    tool_name=getattr(event, "tool_name", ""),
                    tool_call_id=getattr(event, "tool_call_id", ""),
                )
            )


class Where:
    """The call a failure happened in, when no hook input names it (a layer's)."""

    __slots__ = ("agent_id", "session_key", "tool_call_id", "tool_name", "turn_id")

    def __init__(
        self, turn_id: str, agent_id: str, session_key: str, tool_name: str, call_id: str
    ) -> None:
        self.turn_id = turn_id
        self.agent_id = agent_id
        self.session_key = session_key
        self.tool_name = tool_name
        self.tool_call_id = call_id

    @classmethod
    def of_context(cls, ctx: Any) -> Where:
        """The call of a stage context (a tool context's own ids without a turn)."""
        turn = ctx.turn
        return cls(
            turn.turn_id if turn is not None else "",
            turn.agent_id if turn is not None else getattr(ctx, "agent_id", ""),
            turn.session_key if turn is not None else getattr(ctx, "session_key", ""),
            _subject(ctx),
            getattr(ctx, "call_id", ""),
        )


def _fault(step: Step, exc: Exception) -> Fault:
    # an empty TimeoutError under a timeout: the deadline's (as ``describe`` reads it)
    deadline = isinstance(exc, TimeoutError) and step.timeout is not None and not str(exc)
    return Fault.of(step.handler, exc, describe(exc, step), deadline=deadline)


def _subject(inp: Any) -> str:
    """The tool or command a hook input is about ("" for the other hooks)."""
    return str(getattr(inp, "tool_name", None) or getattr(inp, "command", ""))
