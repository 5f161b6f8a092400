"""The tool stage: what happens to one tool call, top to bottom.

``Pipeline.call_tool`` and ``Turn.call_tool`` hand every call to ``run_tool``, which
finds the compiled ``ToolChain`` of (tool, agent) and takes the cheapest path that
keeps the call's behaviour:

1. the empty path: nothing registered for the tool, nobody listening, no tracing: the
   tool is awaited and its value wrapped in a ``ToolResult``;
2. the quiet path (``quiet_path``): only sync ``tool.before`` handlers and nobody
   listening: a plain loop over them, then the tool;
3. the full path: in the ``execute_tool`` span when tracing (``_traced``), through the
   middleware onion when the tool has layers, into ``_core``: tool.before →
   tool.approve (``_approve``) → the tool → tool.after (``_after``), with the
   tool_exec_* events for whoever listens.

A call's identity (tool name, raw name, call id, turn id, agent id, session key) is its
``ToolBeforeInput``, built once when the core starts: the one per-call record that the
approvers, the after-hooks and the events read it from.

The functions take the ``Pipeline`` as their first argument: it keeps the registry, the
bus, the failure policies and the counters; this module keeps the path of a call.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from inspect import isawaitable
from types import CoroutineType
from typing import TYPE_CHECKING, Any, cast

import anyio

from ..bus import events as ev
from ..errors import AbortTurn, HardAbort, MiddlewareError
from .chain import (
    Step,
    Timings,
    Watch,
    build_onion,
    callables,
    compile_steps,
    invoke,
    run_after,
    run_gate,
    run_gate_sync,
    watch_here,
)
from .context import ToolContext
from .failures import Fault, blocked
from .payloads import (
    Approval,
    ApprovalRequest,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
    ToolResult,
    ToolStatus,
    error_result,
    refusal,
)
from .span_content import tool_input
from .tools import normalize_tool_name
from .tracing import (
    INTERNAL,
    end_tool_span,
    fail_span,
    instrument,
    run_gate_sync_tracked,
    tool_span_attributes,
    tool_span_base,
)

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

    from .pipeline import Pipeline
    from .turn import Turn

__all__ = ["ToolCallable", "ToolChain", "compile_tool", "quiet_path", "run_tool"]

ToolCallable = Callable[[dict[str, Any]], Any]
log = logging.getLogger("interpose")
_ABORTS = (AbortTurn, HardAbort)
_CACHE_LIMIT = 4096


class ToolChain:
    """Everything a call of one tool by one agent needs, compiled once per version."""

    __slots__ = (
        "after",
        "after_steps",
        "app",
        "approver_steps",
        "approvers",
        "before",
        "before_steps",
        "empty",
        "quiet",
        "raw_name",
        "span_base",
        "tool_name",
        "track_responders",
        "variants",
        "version",
        "watched",
    )

    def __init__(self, version: int, raw_name: str, tool_name: str) -> None:
        self.version = version
        self.raw_name = raw_name
        self.tool_name = tool_name
        self.before: tuple[Callable[..., Any], ...] = ()
        self.before_steps: tuple[Step, ...] = ()
        self.approvers: tuple[Callable[..., Any], ...] = ()
        self.approver_steps: tuple[Step, ...] = ()
        self.after: tuple[Callable[..., Any], ...] = ()
        self.after_steps: tuple[Step, ...] = ()
        self.app: Callable[[ToolContext], Awaitable[None]] | None = None
        self.empty = True
        # only sync tool.before handlers: run them without a coroutine when nobody listens
        self.quiet = False
        # track which before-step responds: a trusted one may respond past the
        # approvers, and reports (events, spans) name the responder
        self.track_responders = False
        # the same chain for traced calls, by the tracer of interceptor spans (or None)
        self.variants: dict[Tracer | None, ToolChain] = {}
        self.span_base: dict[str, Any] = {}  # execute_tool attributes shared by every call
        # some tool.before or tool.after handler is async with a timeout: under asyncio,
        # one chain._Watch per call gives them their deadlines if they suspend
        self.watched = False


# -- the entry and its paths ----------------------------------------------------------


async def run_tool(
    pipe: Pipeline,
    turn: Turn | None,
    name: str,
    args: dict[str, Any],
    call: ToolCallable,
    call_id: str | None,
    agent_id: str,
    session_key: str,
) -> ToolResult:
    """Run one tool call through the tool stage of ``pipe`` (``turn``: the turn it
    belongs to, None for ``pipe.call_tool`` with nobody listening).

    Raises:
        TypeError: ``args`` is not a dict, ``call`` is not callable, the tool name is
            not a str, or the interceptors or middleware left args that are not a dict.
        RuntimeError: the pipeline has subscribers or services but is not entered.
        MiddlewareError: a tool middleware returned without a result.
        AbortTurn, HardAbort: from a handler or the tool.
    """
    if type(args) is not dict and not isinstance(args, dict):
        raise TypeError(f"tool arguments must be a dict, got {type(args).__name__}")
    chains = pipe._tool_chains.get(agent_id)
    chain = chains.get(name) if chains is not None else None
    if chain is None or chain.version != pipe.registry.version:
        chain = compile_tool(pipe, name, agent_id)
    if not callable(call):
        raise TypeError(f"call must be callable, got {type(call).__name__}")
    tracer = pipe._tracer()
    wanted = pipe.bus.wanted
    if chain.empty and not wanted and tracer is None:
        # the floor plus one struct: nothing registered, nobody listening, no tracing
        try:
            out = call(args)
            if type(out) is CoroutineType or isawaitable(out):
                out = await out
        except _ABORTS:
            raise
        except Exception as exc:
            return error_result(exc)
        return ToolResult(output=out)
    if chain.quiet and not wanted and tracer is None:
        return await quiet_path(pipe, chain, turn, call_id, args, call, agent_id, session_key)
    pipe._check_running()
    if call_id is None:
        call_id = f"call-{next(pipe._call_ids)}"
    if tracer is not None:
        spans = tracer if pipe._trace.level == "interceptor" else None
        chain = chain.variants.get(spans) or compile_tool(pipe, name, agent_id, spans, chain)
        return await _traced(pipe, tracer, chain, turn, call_id, args, call, agent_id, session_key)
    if chain.app is None:
        return await _core(pipe, chain, turn, call_id, args, call, agent_id, session_key)
    ctx = ToolContext(turn, chain.tool_name, name, call_id, args, call, agent_id, session_key)
    await chain.app(ctx)
    if ctx.result is None:  # a plain (on_error="raise") layer returned without one
        raise MiddlewareError("tool")
    return ctx.result


async def quiet_path(
    pipe: Pipeline,
    chain: ToolChain,
    turn: Turn | None,
    call_id: str | None,
    args: dict[str, Any],
    call: ToolCallable,
    agent_id: str,
    session_key: str,
) -> ToolResult:
    """The tool stage for a chain of sync tool.before handlers when nobody listens:
    no events, no timing, no responder tracking (there are no approvers)."""
    name = chain.tool_name
    out = ToolBeforeOutput(args=args)
    inp = ToolBeforeInput(
        tool_name=name,
        turn_id=turn.turn_id if turn is not None else "",
        raw_name=chain.raw_name,
        tool_call_id=f"call-{next(pipe._call_ids)}" if call_id is None else call_id,
        agent_id=agent_id,
        session_key=session_key,
    )
    blocker = run_gate_sync(chain.before, chain.before_steps, inp, out, pipe._settle)
    if blocker is not None:
        return blocked(name, out.block_reason or f"blocked by {blocker.id}", blocker.id)
    if out.result is not None:
        return _as_responded(out.result)
    if type(out.args) is not dict:
        _check_rewritten_args(out, args)
    # inline rather than `invoke`: no timing is needed here, and no extra coroutine
    try:
        value = call(out.args)
        if isawaitable(value):
            value = await value
    except _ABORTS:
        raise
    except Exception as exc:
        return error_result(exc)
    return ToolResult(output=value)


async def _traced(
    pipe: Pipeline,
    tracer: Tracer,
    chain: ToolChain,
    turn: Turn | None,
    call_id: str,
    args: dict[str, Any],
    call: ToolCallable,
    agent_id: str,
    session_key: str,
) -> ToolResult:
    """The tool stage inside its ``execute_tool`` span (current while the tool runs)."""
    trace = pipe._trace
    with tracer.start_as_current_span(
        f"execute_tool {chain.tool_name}",
        kind=INTERNAL,
        attributes=tool_span_attributes(
            chain.span_base,
            call_id,
            session_key,
            turn.provider if turn is not None else "",
            turn.model if turn is not None else "",
        ),
        set_status_on_exception=False,
    ) as span:
        if trace.content and span.is_recording():
            span.set_attributes(tool_input(args, trace.redactor))
        try:
            if chain.quiet and not pipe.bus.wanted:
                # sync tool.before handlers only, nobody listening: the quiet path
                # (no coroutine for the core, no timing), naming who decided
                out, result = _traced_gate(pipe, chain, turn, call_id, args, agent_id, session_key)
                if result is None:
                    try:
                        value = call(out.args)
                        if type(value) is CoroutineType or isawaitable(value):
                            value = await value
                    except _ABORTS:
                        raise
                    except Exception as exc:
                        result = error_result(exc)
                    else:
                        result = ToolResult(output=value)
            elif chain.app is None:
                result = await _core(pipe, chain, turn, call_id, args, call, agent_id, session_key)
            else:
                ctx = ToolContext(
                    turn,
                    chain.tool_name,
                    chain.raw_name,
                    call_id,
                    args,
                    call,
                    agent_id,
                    session_key,
                )
                await chain.app(ctx)
                if ctx.result is None:  # a plain layer returned without one
                    raise MiddlewareError("tool")
                result = ctx.result
        except BaseException as exc:
            fail_span(span, exc)
            raise
        if result.status != "ok" or trace.content:  # an ok call records nothing
            end_tool_span(span, result, trace)
    return result


def _traced_gate(
    pipe: Pipeline,
    chain: ToolChain,
    turn: Turn | None,
    call_id: str,
    args: dict[str, Any],
    agent_id: str,
    session_key: str,
) -> tuple[ToolBeforeOutput, ToolResult | None]:
    """The tool.before handlers of a quiet chain in a traced call: the output, and
    the result when they blocked or responded (naming who, for the span)."""
    name = chain.tool_name
    out = ToolBeforeOutput(args=args)
    inp = ToolBeforeInput(
        tool_name=name,
        turn_id=turn.turn_id if turn is not None else "",
        raw_name=chain.raw_name,
        tool_call_id=call_id,
        agent_id=agent_id,
        session_key=session_key,
    )
    blocker, responder = run_gate_sync_tracked(
        chain.before, chain.before_steps, inp, out, pipe._settle
    )
    if blocker is not None:
        return out, blocked(name, out.block_reason or f"blocked by {blocker.id}", blocker.id)
    if out.result is not None:
        result = _as_responded(out.result)
        if responder is not None:
            result.details.setdefault("decided_by", responder.id)
        return out, result
    if type(out.args) is not dict:
        _check_rewritten_args(out, args)
    return out, None


# -- the core: tool.before, tool.approve, the tool, tool.after ------------------------


async def _core(
    pipe: Pipeline,
    chain: ToolChain,
    turn: Turn | None,
    call_id: str,
    args: dict[str, Any],
    call: ToolCallable,
    agent_id: str,
    session_key: str,
    watch: Watch | None = None,
) -> ToolResult:
    """The full path of one call, the events included.

    Every tool_exec_start gets exactly one tool_exec_end, whatever ends the run: the
    tool's result, an ``AbortTurn``, a cancellation, ``HardAbort`` or an exception on
    its way to the caller; a retried run ends with ``retried=True`` before the next
    one starts.
    """
    if watch is None and chain.watched and (watch := watch_here()) is not None:
        return await watch.run(  # type: ignore[no-any-return]
            _core(pipe, chain, turn, call_id, args, call, agent_id, session_key, watch)
        )
    name = chain.tool_name
    bus = pipe.bus
    wanted = bus.wanted
    # what ran, and for how long, when someone will read it in tool_exec_end
    times: Timings | None = [] if "tool_exec_end" in wanted else None
    attempt = 0  # runs of the tool so far
    # a run began and its tool_exec_end is not published yet: whatever ends the call
    # now (a cancellation, HardAbort, an on_error="raise" failure) must publish it
    unended = False
    decider: Step | None = None
    # the call's record: who, which tool, which call; read by every step below
    inp = ToolBeforeInput(
        tool_name=name,
        turn_id=turn.turn_id if turn is not None else "",
        raw_name=chain.raw_name,
        tool_call_id=call_id,
        agent_id=agent_id,
        session_key=session_key,
    )
    try:
        out = ToolBeforeOutput(args=args)
        result: ToolResult | None = None
        reason = ""
        if chain.before:
            decider, responder = await run_gate(
                chain.before,
                chain.before_steps,
                inp,
                out,
                pipe._hook_failed,
                chain.track_responders or bool(wanted),
                times,
                watch,
            )
            if decider is not None:
                result = blocked(name, out.block_reason or f"blocked by {decider.id}", decider.id)
                reason = result.output["reason"]
            elif out.result is not None:
                decider = responder
                result = _as_responded(out.result)
                if responder is not None:
                    result.details.setdefault("decided_by", responder.id)
        if type(out.args) is not dict:
            _check_rewritten_args(out, args)
        approved = bool(chain.approvers) and (
            result is None
            or (result.status == "responded" and not (decider is not None and decider.trusted))
        )
        if approved:
            denial = await _approve(pipe, chain, inp, out.args, times)
            if denial is not None:
                decider, result = denial
                reason = result.output["reason"]
        duration = 0
        if result is None:
            attempt = 1
            unended = True  # set before publishing: a publish, once begun, lands
            if "tool_exec_start" in wanted:
                await bus.publish(_exec_start(pipe, inp))
            # the operation, inline (one coroutine less than `invoke` on the hot path),
            # timed only for whoever reads the duration: after-hooks, tool_exec_end
            timed = times is not None or bool(chain.after)
            start = time.perf_counter_ns() if timed else 0
            try:
                value = call(out.args)
                if isawaitable(value):
                    value = await value
            except _ABORTS:
                raise
            except Exception as exc:
                result = error_result(exc)
            else:
                result = ToolResult(output=value)
            if timed:
                duration = time.perf_counter_ns() - start
        elif "tool_exec_skipped" in wanted:
            await bus.publish(
                ev.ToolExecSkipped(
                    ts=time.time_ns(),
                    seq=next(pipe._seq),
                    turn_id=inp.turn_id,
                    agent_id=agent_id,
                    session_key=session_key,
                    tool_name=name,
                    tool_call_id=call_id,
                    why=cast(ev.SkipReason, result.status),
                    reason=reason,
                    decided_by=decider.id if decider is not None else "",
                )
            )
        if chain.after:
            while True:
                result, retry = await _after(
                    pipe, chain, inp, out.args, result, duration, times, watch
                )
                if not (retry and attempt and attempt <= pipe.max_retries):
                    break
                # a retry: this run ends here, the next one starts (rare: no hurry)
                unended = False
                if "tool_exec_end" in wanted:
                    await bus.publish(
                        _tool_end(
                            pipe,
                            inp,
                            result,
                            duration,
                            decider,
                            reason,
                            times,
                            attempt,
                            retried=True,
                        )
                    )
                    times = []
                attempt += 1
                unended = True
                if "tool_exec_start" in wanted:
                    await bus.publish(_exec_start(pipe, inp, attempt))
                result, duration = await invoke(call, out.args)
        unended = False
        if "tool_exec_end" in wanted:
            ids, ns = _what_ran(times)
            await bus.publish(
                ev.ToolExecEnd(
                    ts=time.time_ns(),
                    seq=next(pipe._seq),
                    turn_id=inp.turn_id,
                    agent_id=agent_id,
                    session_key=session_key,
                    tool_name=name,
                    tool_call_id=call_id,
                    status=result.status,
                    is_error=result.is_error,
                    duration_ns=duration,
                    decided_by=decider.id if decider is not None else "",
                    reason=reason,
                    interceptors=ids,
                    interceptor_ns=ns,
                    attempt=attempt or 1,
                )
            )
        return result
    except AbortTurn as exc:
        # the call leaves with the turn; listeners still learn what happened to it
        if "tool_exec_end" in wanted:
            await bus.publish(
                _tool_end(
                    pipe,
                    inp,
                    refusal("aborted", name, exc.reason),
                    0,
                    None,
                    exc.reason,
                    times,
                    attempt,
                    decided_by=exc.source,
                )
            )
        raise
    except BaseException as exc:
        if unended and "tool_exec_end" in wanted:
            _end_interrupted(pipe, exc, inp, times, attempt)
        raise


async def _approve(
    pipe: Pipeline,
    chain: ToolChain,
    inp: ToolBeforeInput,
    args: dict[str, Any],
    times: Timings | None,
) -> tuple[Step, ToolResult] | None:
    """Run the approvers; None if all allow, else (step, refusal): "denied" for a
    deny or a late answer, "blocked" for an approver that failed closed (its details
    hold the failure).

    Raises:
        AbortTurn, HardAbort: from an approver.
        Exception: an approver's failure, when its policy is "raise".
    """
    request = ApprovalRequest(
        turn_id=inp.turn_id,
        tool_name=chain.tool_name,
        tool_call_id=inp.tool_call_id,
        args=args,
        agent_id=inp.agent_id,
        session_key=inp.session_key,
    )
    for fn, step in zip(chain.approvers, chain.approver_steps, strict=True):
        start = time.perf_counter_ns()
        try:
            try:
                answer = fn(request)
                if answer is not None and isawaitable(answer):
                    answer = await answer
            finally:
                if times is not None:
                    times.append((step.id, time.perf_counter_ns() - start))
            decision, reason = _decision(answer)
        except _ABORTS as exc:
            exc.source = exc.source or step.id
            raise
        except Exception as exc:
            fault = await pipe._record_failure(
                step,
                exc,
                request.turn_id,
                inp.agent_id,
                inp.session_key,
                chain.tool_name,
                inp.tool_call_id,
            )
            if isinstance(exc, TimeoutError):  # a late approver is a deny, whatever the policy
                late = (
                    f"approver '{step.id}' did not answer within {step.timeout}s"
                    if step.timeout is not None
                    else f"approver '{step.id}' timed out: {fault.error}"
                )
                return step, refusal("denied", chain.tool_name, late, decided_by=step.id)
            if step.on_error == "raise":
                raise
            if step.on_error == "skip":
                continue
            reason = f"interceptor '{step.id}' failed: {fault.error}"
            return step, refusal(
                "blocked", chain.tool_name, reason, decided_by=step.id, failure=fault.details()
            )
        if decision == "ask":
            decision, reason = await _ask_human(pipe, request, reason)
        if decision == "deny":
            return step, refusal(
                "denied", chain.tool_name, reason or f"denied by {step.id}", decided_by=step.id
            )
    return None


async def _ask_human(pipe: Pipeline, request: ApprovalRequest, reason: str) -> tuple[str, str]:
    """The human's answer to an approver's "ask", as (decision, reason); no handler,
    a failing one, a late one or another "ask" mean deny."""
    if pipe.human_approval is None:
        return "deny", f"approval required ({reason}) but no human-approval handler is set"
    try:
        with anyio.fail_after(pipe.approval_timeout):
            answer = pipe.human_approval(request, reason)
            if isawaitable(answer):
                answer = await answer
        decision, why = _decision(answer)
    except TimeoutError:
        return (
            "deny",
            f"approval required ({reason}): no answer within {pipe.approval_timeout}s",
        )
    except Exception as exc:
        fault = Fault.of(pipe.human_approval, exc, f"{type(exc).__name__}: {exc}", deadline=False)
        log.warning(
            "human-approval handler failed: %s [%s]",
            fault.error,
            fault.where(),
            exc_info=exc if pipe._debugging() else None,
        )
        return "deny", f"approval required ({reason}): the handler failed: {exc!r}"
    if decision == "ask":
        return "deny", f"approval required ({reason}): the handler answered 'ask' again"
    return decision, why or reason


async def _after(
    pipe: Pipeline,
    chain: ToolChain,
    inp: ToolBeforeInput,
    args: dict[str, Any],
    result: ToolResult,
    duration: int,
    times: Timings | None,
    watch: Watch | None = None,
) -> tuple[ToolResult, bool]:
    """Run the tool.after interceptors on ``result``; returns the result they left
    and whether they asked for a retry (never after a failure that blocked)."""
    after_inp = ToolAfterInput(
        tool_name=chain.tool_name,
        turn_id=inp.turn_id,
        tool_call_id=inp.tool_call_id,
        is_error=result.is_error,
        blocked=result.status in ("blocked", "denied"),
        status=result.status,
        duration_ns=duration,
        raw_name=chain.raw_name,
        agent_id=inp.agent_id,
        session_key=inp.session_key,
        args=args,
    )
    out = ToolAfterOutput(result=result)
    failer = await run_after(
        chain.after, chain.after_steps, after_inp, out, pipe._hook_failed, times, watch
    )
    return out.result, out.retry and failer is None


# -- the events of a run --------------------------------------------------------------


def _exec_start(pipe: Pipeline, inp: ToolBeforeInput, attempt: int = 1) -> ev.ToolExecStart:
    return ev.ToolExecStart(
        ts=time.time_ns(),
        seq=next(pipe._seq),
        turn_id=inp.turn_id,
        agent_id=inp.agent_id,
        session_key=inp.session_key,
        tool_name=inp.tool_name,
        tool_call_id=inp.tool_call_id,
        raw_name=inp.raw_name,
        attempt=attempt,
    )


def _end_interrupted(
    pipe: Pipeline,
    exc: BaseException,
    inp: ToolBeforeInput,
    times: Timings | None,
    attempt: int,
) -> None:
    """Publish the tool_exec_end of a run that ``exc`` cut short: a cancellation or
    ``HardAbort`` (status "aborted"), an exception on its way to the caller (status
    "error").  At once, past a full buffer: the caller must not wait on observers
    now, and a cancelled one could not."""
    status: ToolStatus = "aborted"
    source = ""
    if isinstance(exc, HardAbort):
        why, source = exc.reason, exc.source
    elif isinstance(exc, anyio.get_cancelled_exc_class()):
        why = "cancelled"
    else:
        why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        if isinstance(exc, Exception):
            status = "error"
    pipe.bus.publish_now(
        _tool_end(
            pipe,
            inp,
            refusal(status, inp.tool_name, why),
            0,
            None,
            why,
            times,
            attempt,
            decided_by=source,
        )
    )


def _tool_end(
    pipe: Pipeline,
    inp: ToolBeforeInput,
    result: ToolResult,
    duration: int,
    decider: Step | None,
    reason: str,
    times: Timings | None,
    attempt: int,
    *,
    retried: bool = False,
    decided_by: str | None = None,
) -> ev.ToolExecEnd:
    """The tool_exec_end of the slow paths (a retried run, an aborted or cancelled
    call); the common one is built in place in ``_core``."""
    ids, ns = _what_ran(times)
    return ev.ToolExecEnd(
        ts=time.time_ns(),
        seq=next(pipe._seq),
        turn_id=inp.turn_id,
        agent_id=inp.agent_id,
        session_key=inp.session_key,
        tool_name=inp.tool_name,
        tool_call_id=inp.tool_call_id,
        status=result.status,
        is_error=result.is_error,
        duration_ns=duration,
        decided_by=(decider.id if decider is not None else "")
        if decided_by is None
        else decided_by,
        reason=reason,
        interceptors=ids,
        interceptor_ns=ns,
        attempt=attempt or 1,
        retried=retried,
    )


# -- compiling a chain ----------------------------------------------------------------


def compile_tool(
    pipe: Pipeline,
    raw_name: str,
    agent_id: str,
    spans: Tracer | None = None,
    base: ToolChain | None = None,
) -> ToolChain:
    """Compile the chain of ``raw_name`` for ``agent_id`` and cache it on ``pipe``; with
    ``base``, its variant for traced calls (a span per step with ``spans``), cached on it.

    Raises:
        TypeError: ``raw_name`` is not a str.
    """
    if not isinstance(raw_name, str):
        raise TypeError(f"tool name must be a str, got {type(raw_name).__name__}")
    reg = pipe.registry
    tool = normalize_tool_name(raw_name)
    chain = ToolChain(reg.version, raw_name, tool)

    def compiled(hook: str, timeout: float | None) -> tuple[Any, tuple[Step, ...]]:
        fns, steps = compile_steps(reg.entries(hook, tool=tool, agent=agent_id), timeout)
        if spans is None:
            return fns, steps
        steps = tuple(instrument(s, spans) for s in steps)
        return callables(steps), steps

    chain.before, chain.before_steps = compiled("tool.before", pipe.interceptor_timeout)
    chain.approvers, chain.approver_steps = compiled("tool.approve", pipe.approval_timeout)
    chain.after, chain.after_steps = compiled("tool.after", pipe.interceptor_timeout)
    _, layers = compile_steps(reg.entries("tool", tool=tool, agent=agent_id), None, wrap=False)
    if spans is not None:
        layers = tuple(instrument(s, spans, layer=True) for s in layers)
    if layers:

        async def core(ctx: ToolContext) -> None:
            try:
                ctx.result = await _core(
                    pipe,
                    chain,
                    ctx.turn,
                    ctx.call_id,
                    ctx.args,
                    ctx.call,
                    ctx.agent_id,
                    ctx.session_key,
                )
            except Exception as exc:
                # on its way to the caller: no middleware applies its policy to it
                ctx._escaping = exc
                raise

        chain.app = build_onion(layers, core, pipe._layer_failed, core_marks=True)
    chain.empty = not (chain.before or chain.approvers or chain.after or layers)
    chain.watched = any(s.watched for s in chain.before_steps + chain.after_steps)
    chain.quiet = (
        bool(chain.before)
        and not (chain.approvers or chain.after or layers)
        and not any(s.is_async for s in chain.before_steps)
    )
    if base is not None:
        chain.span_base = tool_span_base(tool, raw_name, agent_id)
    chain.track_responders = base is not None or (
        bool(chain.approvers) and any(s.trusted for s in chain.before_steps)
    )
    if base is not None:
        base.variants[spans] = chain
        return chain
    chains = pipe._tool_chains.get(agent_id)
    if chains is None:
        if len(pipe._tool_chains) >= _CACHE_LIMIT:
            pipe._tool_chains.clear()
        chains = pipe._tool_chains[agent_id] = {}
    elif len(chains) >= _CACHE_LIMIT:
        chains.clear()
    chains[raw_name] = chain
    return chain


# -- helpers --------------------------------------------------------------------------


def _check_rewritten_args(out: ToolBeforeOutput, given: Any) -> None:
    """Raise TypeError when the args are not a dict (or a dict subclass) any more, naming
    who left them so: the tool.before interceptors, or a tool middleware (``ctx.args``).

    Raises:
        TypeError: as said.
    """
    if isinstance(out.args, dict):
        return
    who = (
        "tool middleware left ctx.args"
        if out.args is given
        else "tool.before interceptors left args"
    )
    raise TypeError(f"{who} as {type(out.args).__name__}, not a dict")


def _as_responded(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        if value.status in ("ok", "error"):
            value.status = "responded"
        return value
    return ToolResult(output=value, status="responded")


def _decision(answer: Any) -> tuple[str, str]:
    """(decision, reason) of an approver's answer.

    Raises:
        TypeError: the answer is not an Approval, a bool or None.
    """
    if answer is None or answer is True:
        return "allow", ""
    if answer is False:
        return "deny", ""
    if isinstance(answer, Approval):
        return answer.decision, answer.reason
    raise TypeError(f"an approver must return Approval, bool or None, got {type(answer).__name__}")


def _what_ran(times: Timings | None) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The ``interceptors`` and ``interceptor_ns`` fields of a tool_exec_end."""
    if not times:
        return (), ()
    ids, ns = zip(*times, strict=False)  # pairs: both come out the same length
    return ids, ns
