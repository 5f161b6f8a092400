"""The tool stage: what happens to one tool call, top to bottom.

``Pipeline.call_tool`` and ``Turn.call_tool`` build the call's record, its
``ToolContext`` (turn, tool name as called, call id, args, the tool, agent id, session
key; the ``ctx`` of the tool middleware), and hand it alone to ``run_tool``, which
finds the compiled ``ToolChain`` of (tool, agent) and takes the cheapest path that
keeps the call's behaviour:

1. the empty path: nothing registered for the tool, nobody listening, no tracing: the
   tool is awaited and its value wrapped in a ``ToolResult``;
2. the quiet path (``quiet_path``): only sync ``tool.before`` / ``tool.after``
   handlers and nobody listening: plain loops over them around the tool;
3. the full path: in the ``execute_tool`` span when tracing (``_traced``), through the
   middleware onion when the tool has layers, into ``full_path``: tool.before →
   tool.approve (``approving.approve``) → the tool → tool.after, with the tool_exec_* events
   for whoever listens.

The handlers read the call's identity from its ``ToolBeforeInput``, built from the
record once when the before-phase starts (and only when something reads it).

The functions take the pipeline's ``Runtime`` (the registry's settings, the bus, the
failure policy and counters, the chain cache) and the chain; this module keeps the
path of a call.

"Call the tool, await it, wrap the error" is written out in four places, each on a
row of ``benchmarks/bench_tool_call.py`` that one coroutine more would slow down:
``Pipeline.call_tool`` (the empty pipeline), ``quiet_path`` (sync interceptors, sync
pairs), the bare core of ``_core_of`` (middleware layers) and ``full_path`` (async
handlers, approvers, observers); every other caller (a retry, a traced quiet call,
the first call of a chain) uses ``chain.invoke``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from inspect import isawaitable
from time import perf_counter_ns
from types import CoroutineType
from typing import TYPE_CHECKING, Any, cast

import anyio
import msgspec

from ..bus import events as ev
from ..errors import AbortTurn, HardAbort, MiddlewareError
from .approving import approve
from .chain import (
    Step,
    Timings,
    invoke,
    run_after_sync,
    run_gate,
    run_gate_sync,
    run_gate_sync_tracked,
    run_plain,
)
from .context import ToolContext
from .deadlines import Watch, watch_here
from .failures import blocked
from .onion import build_onion
from .payloads import (
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
from .tool_chain import ToolChain, compile_tool
from .tracing import end_tool_span, enter_span, exit_span, fail_span, tool_span_attributes

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

    from .runtime import Runtime

__all__ = ["ToolCallable", "full_path", "quiet_path", "run_tool"]

ToolCallable = Callable[[dict[str, Any]], Any]
_ABORTS = (AbortTurn, HardAbort)
_CACHE_LIMIT = 4096


# -- the entry and its paths ----------------------------------------------------------


def run_tool(rt: Runtime, ctx: ToolContext) -> Awaitable[ToolResult]:
    """The tool call ``ctx`` (``ctx.tool_name`` not set yet, ``ctx.call_id`` "" when
    the caller gave none) through the tool stage of the pipeline of ``rt``: ``await
    run_tool(rt, ctx)``.  A plain function that picks the call's path and returns its
    coroutine, not a coroutine of its own: one frame less on every call.

    Raises:
        TypeError: ``args`` is not a dict, ``call`` is not callable, the tool name is
            not a str, or the interceptors or middleware left args that are not a dict.
        RuntimeError: the pipeline has subscribers or services but is not entered.
        MiddlewareError: a tool middleware returned without a result.
        AbortTurn, HardAbort: from a handler or the tool.
    """
    args = ctx.args
    if type(args) is not dict and not isinstance(args, dict):
        raise TypeError(f"tool arguments must be a dict, got {type(args).__name__}")
    chains = rt.chains.get(ctx.agent_id)
    chain = chains.get(ctx.raw_name) if chains is not None else None
    if chain is None or chain.version != rt.host.registry.version:
        chain = _compile(rt, ctx.raw_name, ctx.agent_id)
    if not callable(ctx.call):
        raise TypeError(f"call must be callable, got {type(ctx.call).__name__}")
    ctx.tool_name = chain.tool_name
    tracer = rt.trace.tracer()
    wanted = rt.bus.wanted
    if chain.empty and not wanted and tracer is None:
        # nothing registered, nobody listening, no tracing (a turn's call, or the
        # first call of a tool: ``Pipeline.call_tool`` inlines this for the others)
        return _bare(ctx.call, args)
    if chain.quiet and not wanted and tracer is None:
        return quiet_path(rt, chain, _before_input(rt, chain, ctx), args, ctx.call)
    rt.check_running()
    if not ctx.call_id:
        ctx.call_id = f"call-{next(rt.call_ids)}"
    if tracer is not None:
        spans = tracer if rt.trace.level == "interceptor" else None
        chain = chain.variants.get(spans) or _compile(rt, ctx.raw_name, ctx.agent_id, spans, chain)
        return _traced(rt, tracer, chain, ctx)
    if chain.app is None:
        return full_path(rt, chain, ctx)
    return _through_onion(chain.app, ctx)


async def _bare(call: ToolCallable, args: dict[str, Any]) -> ToolResult:
    return (await invoke(call, args))[0]


async def _through_onion(
    app: Callable[[ToolContext], Awaitable[None]], ctx: ToolContext
) -> ToolResult:
    """The call ``ctx`` (its id minted) through a tool's middleware onion ``app``."""
    await app(ctx)
    if ctx.result is None:  # a plain (on_error="raise") layer returned without one
        raise MiddlewareError("tool")
    return ctx.result


def _before_input(rt: Runtime, chain: ToolChain, ctx: ToolContext) -> ToolBeforeInput:
    """The call's identity as the handlers read it (minting its call id if unset)."""
    turn = ctx.turn
    return ToolBeforeInput(
        tool_name=chain.tool_name,
        turn_id=turn.turn_id if turn is not None else "",
        raw_name=chain.raw_name,
        tool_call_id=ctx.call_id or f"call-{next(rt.call_ids)}",
        agent_id=ctx.agent_id,
        session_key=ctx.session_key,
    )


async def quiet_path(
    rt: Runtime,
    chain: ToolChain,
    inp: ToolBeforeInput,
    args: dict[str, Any],
    call: ToolCallable,
) -> ToolResult:
    """The tool stage for a chain of sync tool.before / tool.after handlers when
    nobody listens: no events, no timing but the tool's duration for the after-hooks,
    no responder tracking (there are no approvers).

    The call's record here is its handlers' input ``inp``, with the args and the
    tool beside it: a ``ToolContext`` on top would cost this path (the "sync
    interceptors" rows) a quarter of its time, and nothing here reads one.
    """
    result: ToolResult | None = None
    if chain.before:
        out = ToolBeforeOutput(args=args)
        blocker = run_gate_sync(chain.before, chain.before_steps, inp, out, rt.settle)
        if blocker is not None:
            result = blocked(
                chain.tool_name, out.block_reason or f"blocked by {blocker.id}", blocker.id
            )
        elif out.result is not None:
            result = _as_responded(out.result)
        if type(out.args) is not dict:
            _check_rewritten_args(out, args)
        args = out.args
    after = chain.after
    duration = 0
    if result is None:
        # the tool, inline: the "sync interceptors" and "sync pair" rows; timed only
        # for the after-hooks
        start = perf_counter_ns() if after else 0
        try:
            value = call(args)
            if type(value) is CoroutineType or isawaitable(value):
                value = await value
        except _ABORTS:
            raise
        except Exception as exc:
            result = error_result(exc)
        else:
            result = ToolResult(output=value)
        if not after:
            return result
        duration = perf_counter_ns() - start
        attempt = 1
    elif not after:
        return result
    else:
        attempt = 0  # blocked or responded: never retried
    while True:
        out_after = ToolAfterOutput(result=result)
        failer = run_after_sync(
            after,
            chain.after_steps,
            _after_input(inp, args, result, duration),
            out_after,
            rt.settle,
        )
        result = out_after.result
        if not (out_after.retry and failer is None and attempt and attempt <= rt.host.max_retries):
            return result
        attempt += 1
        result, duration = await invoke(call, args)


async def _traced(rt: Runtime, tracer: Tracer, chain: ToolChain, ctx: ToolContext) -> ToolResult:
    """The tool stage inside its ``execute_tool`` span (current while the tool runs)."""
    trace = rt.trace
    turn = ctx.turn
    span, token = enter_span(
        tracer,
        f"execute_tool {chain.tool_name}",
        tool_span_attributes(
            chain.span_base,
            ctx.call_id,
            ctx.session_key,
            turn.provider if turn is not None else "",
            turn.model if turn is not None else "",
        ),
    )
    try:
        if trace.content and span.is_recording():
            span.set_attributes(tool_input(ctx.args, trace.redactor))
        if chain.quiet and not chain.after and not rt.bus.wanted:
            # sync tool.before handlers only, nobody listening: the quiet path
            # (no coroutine for the core, no timing), naming who decided
            out, result = _traced_gate(rt, chain, ctx)
            if result is None:
                result, _ = await invoke(ctx.call, out.args)
        elif chain.app is None:
            result = await full_path(rt, chain, ctx)
        else:
            await chain.app(ctx)
            if ctx.result is None:  # a plain layer returned without one
                raise MiddlewareError("tool")
            result = ctx.result
        if result.status != "ok" or trace.content:  # an ok call records nothing
            end_tool_span(span, result, trace)
    except BaseException as exc:
        fail_span(span, exc)
        exit_span(span, token, exc, status=False)  # fail_span set the status
        raise
    exit_span(span, token)
    return result


def _traced_gate(
    rt: Runtime, chain: ToolChain, ctx: ToolContext
) -> tuple[ToolBeforeOutput, ToolResult | None]:
    """The tool.before handlers of a quiet chain in a traced call: the output, and
    the result when they blocked or responded (naming who, for the span)."""
    name = chain.tool_name
    out = ToolBeforeOutput(args=ctx.args)
    blocker, responder = run_gate_sync_tracked(
        chain.before, chain.before_steps, _before_input(rt, chain, ctx), out, rt.settle
    )
    if blocker is not None:
        return out, blocked(name, out.block_reason or f"blocked by {blocker.id}", blocker.id)
    if out.result is not None:
        result = _as_responded(out.result)
        if responder is not None:
            result.details.setdefault("decided_by", responder.id)
        return out, result
    if type(out.args) is not dict:
        _check_rewritten_args(out, ctx.args)
    return out, None


# -- the core: tool.before, tool.approve, the tool, tool.after ------------------------


async def full_path(
    rt: Runtime, chain: ToolChain, ctx: ToolContext, watch: Watch | None = None
) -> ToolResult:
    """The full path of the call ``ctx`` (its id minted, the pipeline running): each
    tool_exec_start gets one tool_exec_end, whatever ends the run (a result, an abort,
    a cancellation, an exception on its way out)."""
    if watch is None and chain.watched and (watch := watch_here()) is not None:
        return await watch.run(full_path(rt, chain, ctx, watch))  # type: ignore[no-any-return]
    bus, turn, args = rt.bus, ctx.turn, ctx.args
    wanted = bus.wanted
    # the handlers' record of the call (``_before_input``, inline: one call less)
    inp = ToolBeforeInput(
        tool_name=chain.tool_name,
        turn_id=turn.turn_id if turn is not None else "",
        raw_name=chain.raw_name,
        tool_call_id=ctx.call_id,
        agent_id=ctx.agent_id,
        session_key=ctx.session_key,
    )
    out = ToolBeforeOutput(args=args)
    # what ran, and for how long, when someone will read it in tool_exec_end
    times: Timings | None = [] if "tool_exec_end" in wanted else None
    ctx._inp, ctx._out = inp, out
    # a struct's field costs ~17 ns to set: the defaults (None) are left alone
    if watch is not None:
        ctx._watch = watch
    if times is not None:
        ctx._times = times
    try:
        result: ToolResult | None = None
        if chain.before:
            if chain.sync_before:
                # sync handlers: no coroutine (a failure is published at once)
                if wanted or chain.track_responders:  # the observed rows
                    decider, responder = run_gate_sync_tracked(
                        chain.before, chain.before_steps, inp, out, rt.settle, times
                    )
                else:  # the rows with approvers
                    decider = run_gate_sync(chain.before, chain.before_steps, inp, out, rt.settle)
                    responder = None
            else:
                gate = run_gate(
                    chain.before,
                    chain.before_steps,
                    inp,
                    out,
                    rt.hook_failed,
                    chain.track_responders or bool(wanted),
                    times,
                    watch,
                )
                if watch is not None:
                    watch.loop = gate  # what the gate awaits when it waits: a handler
                decider, responder = await gate
            if decider is not None or out.result is not None:
                result = _gated(chain, ctx, decider, responder)
        if type(out.args) is not dict:
            _check_rewritten_args(out, args)
        if chain.approvers and (result is None or _asks_approval(ctx, result)):
            denial = await approve(rt, chain, ctx, _rejudge)
            if denial is not None:
                result = denial
            elif result is not None and out.result is None:
                result = None  # a response to arguments since edited: the tool runs
        if result is None:
            ctx._attempt = 1
            ctx._unended = True  # set before publishing: a publish, once begun, lands
            if "tool_exec_start" in wanted:
                await bus.publish(_exec_start(rt, inp))
            # the tool, inline (one coroutine less than `invoke`); timed only for
            # whoever reads the duration: after-hooks, tool_exec_end
            timed = times is not None or bool(chain.after)
            start = perf_counter_ns() if timed else 0
            try:
                value = ctx.call(out.args)
                if type(value) is CoroutineType or isawaitable(value):
                    value = await value
            except _ABORTS:
                raise
            except Exception as exc:
                result = error_result(exc)
            else:
                result = ToolResult(output=value)
            if timed:
                ctx._duration = perf_counter_ns() - start
        elif "tool_exec_skipped" in wanted:
            await bus.publish(_skipped(rt, ctx, result))
        if chain.after:
            result = await _after(rt, chain, ctx, result)
        ctx._unended = False
        if "tool_exec_end" in wanted:
            await bus.publish(_tool_end(rt, ctx, result))
        return result
    except AbortTurn as exc:  # it leaves with the turn; listeners still learn of it
        if "tool_exec_end" in wanted:
            await bus.publish(_aborted(rt, ctx, exc))
        raise
    except BaseException as exc:
        if ctx._unended and "tool_exec_end" in wanted:
            _end_interrupted(rt, exc, ctx)
        raise


def _asks_approval(ctx: ToolContext, result: ToolResult) -> bool:
    """Whether the approvers see a call that has a result: it was answered by a step
    that is not trusted to answer past them (a call that goes on, they always see)."""
    decider = ctx._decider
    return result.status == "responded" and not (decider is not None and decider.trusted)


def _aborted(rt: Runtime, ctx: ToolContext, exc: AbortTurn) -> ev.ToolExecEnd:
    """The tool_exec_end of a call that leaves with its turn (``AbortTurn``)."""
    ctx._decider, ctx._reason, ctx._duration = None, exc.reason, 0
    aborted = refusal("aborted", ctx._inp.tool_name, exc.reason)
    return _tool_end(rt, ctx, aborted, decided_by=exc.source)


def _gated(
    chain: ToolChain, ctx: ToolContext, decider: Step | None, responder: Step | None
) -> ToolResult | None:
    """What the tool.before handlers decided: a refusal (``decider`` blocked), a
    response, or None to go on; notes who decided on ``ctx``."""
    out = ctx._out
    if decider is not None:
        ctx._decider = decider
        result = blocked(
            chain.tool_name, out.block_reason or f"blocked by {decider.id}", decider.id
        )
        ctx._reason = result.output["reason"]
        return result
    if out.result is None:
        return None
    ctx._decider = responder
    result = _as_responded(out.result)
    if responder is not None:
        result.details.setdefault("decided_by", responder.id)
    return result


async def _rejudge(
    rt: Runtime, chain: ToolChain, ctx: ToolContext, args: dict[str, Any]
) -> ToolResult | None:
    """Judge the call again with the arguments a person edited (``approving.approve``):
    the tool.before handlers run on them; the result when they block or answer the
    call, else None (the call goes on with them)."""
    out = ctx._out
    out.args, out.block, out.block_reason, out.result = args, False, "", None
    if not chain.before:
        return None
    watch = ctx._watch
    gate = run_gate(
        chain.before,
        chain.before_steps,
        ctx._inp,
        out,
        rt.hook_failed,
        True,
        ctx._times,
        watch,
    )
    if watch is not None:
        watch.loop = gate
    decider, responder = await gate
    if type(out.args) is not dict:
        _check_rewritten_args(out, args)
    return _gated(chain, ctx, decider, responder)


async def _after(rt: Runtime, chain: ToolChain, ctx: ToolContext, result: ToolResult) -> ToolResult:
    """Run the tool.after interceptors on ``result``, and re-run the tool when they
    ask for a retry (never after a failure that blocked, at most ``max_retries``
    times); returns the result they left."""
    bus = rt.bus
    args = ctx._out.args
    while True:
        out = ToolAfterOutput(result=result)
        watch = ctx._watch
        loop = run_plain(
            chain.after,
            chain.after_steps,
            _after_input(ctx._inp, args, result, ctx._duration),
            out,
            rt.hook_failed,
            ctx._times,
            watch,
        )
        if watch is not None:
            watch.loop = loop  # what the loop awaits when it waits: a handler
        failer = await loop
        result = out.result
        # a blocked, denied or responded call (attempt 0) has nothing to re-run
        if not (out.retry and failer is None and 0 < ctx._attempt <= rt.host.max_retries):
            return result
        # a retry: this run ends here, the next one starts (rare: no hurry)
        ctx._unended = False
        if "tool_exec_end" in bus.wanted:
            await bus.publish(_tool_end(rt, ctx, result, retried=True))
            ctx._times = []
        ctx._attempt += 1
        ctx._unended = True
        if "tool_exec_start" in bus.wanted:
            await bus.publish(_exec_start(rt, ctx._inp, ctx._attempt))
        result, ctx._duration = await invoke(ctx.call, args)


def _after_input(
    inp: ToolBeforeInput, args: dict[str, Any], result: ToolResult, duration: int
) -> ToolAfterInput:
    """The tool.after input of the call ``inp`` ended with ``result``."""
    return ToolAfterInput(
        tool_name=inp.tool_name,
        turn_id=inp.turn_id,
        tool_call_id=inp.tool_call_id,
        is_error=result.is_error,
        blocked=result.status in ("blocked", "denied"),
        status=result.status,
        duration_ns=duration,
        raw_name=inp.raw_name,
        agent_id=inp.agent_id,
        session_key=inp.session_key,
        args=args,
    )


# -- the events of a run --------------------------------------------------------------


def _exec_start(rt: Runtime, inp: ToolBeforeInput, attempt: int = 1) -> ev.ToolExecStart:
    return ev.ToolExecStart(
        ts=time.time_ns(),
        seq=next(rt.seq),
        turn_id=inp.turn_id,
        agent_id=inp.agent_id,
        session_key=inp.session_key,
        tool_name=inp.tool_name,
        tool_call_id=inp.tool_call_id,
        raw_name=inp.raw_name,
        attempt=attempt,
    )


def _skipped(rt: Runtime, ctx: ToolContext, result: ToolResult) -> ev.ToolExecSkipped:
    inp, decider = ctx._inp, ctx._decider
    return ev.ToolExecSkipped(
        ts=time.time_ns(),
        seq=next(rt.seq),
        turn_id=inp.turn_id,
        agent_id=inp.agent_id,
        session_key=inp.session_key,
        tool_name=inp.tool_name,
        tool_call_id=inp.tool_call_id,
        why=cast(ev.SkipReason, result.status),
        reason=ctx._reason,
        decided_by=decider.id if decider is not None else "",
    )


def _end_interrupted(rt: Runtime, exc: BaseException, ctx: ToolContext) -> None:
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
    ctx._decider, ctx._reason, ctx._duration = None, why, 0
    rt.bus.publish_now(
        _tool_end(rt, ctx, refusal(status, ctx._inp.tool_name, why), decided_by=source)
    )


def _tool_end(
    rt: Runtime,
    ctx: ToolContext,
    result: ToolResult,
    *,
    retried: bool = False,
    decided_by: str | None = None,
) -> ev.ToolExecEnd:
    """The tool_exec_end of the run of ``ctx`` that ended with ``result`` (the end of
    the call, a retried run, an aborted or cancelled call)."""
    inp, decider, times = ctx._inp, ctx._decider, ctx._times
    # the interceptors that ran and their durations: pairs, so both come out as long
    # (no ``strict=``: a keyword costs zip ~130 ns a call)
    ids, ns = zip(*times) if times else ((), ())  # noqa: B905
    # 15 keywords at most: past that CPython builds the call's keywords into a dict
    # (half a microsecond), so ``retried``, rare, is set on a copy
    end = ev.ToolExecEnd(
        ts=time.time_ns(),
        seq=next(rt.seq),
        turn_id=inp.turn_id,
        agent_id=inp.agent_id,
        session_key=inp.session_key,
        tool_name=inp.tool_name,
        tool_call_id=inp.tool_call_id,
        status=result.status,
        is_error=result.is_error,
        duration_ns=ctx._duration,
        decided_by=(decider.id if decider is not None else "")
        if decided_by is None
        else decided_by,
        reason=ctx._reason,
        interceptors=ids,
        interceptor_ns=ns,
        attempt=ctx._attempt or 1,
    )
    return msgspec.structs.replace(end, retried=True) if retried else end


# -- compiling a chain ----------------------------------------------------------------


def _compile(
    rt: Runtime,
    raw_name: str,
    agent_id: str,
    spans: Tracer | None = None,
    base: ToolChain | None = None,
) -> ToolChain:
    """``tool_chain.compile_tool``, with the middleware onion around this stage's core."""
    chain = compile_tool(rt, raw_name, agent_id, spans, base)
    if chain.layers:
        chain.app = build_onion(
            chain.layers, _core_of(rt, chain), rt.failures.layer_failed, core_marks=True
        )
    return chain


def _core_of(rt: Runtime, chain: ToolChain) -> Callable[[ToolContext], Awaitable[None]]:
    """The innermost function of the onion of ``chain``: ``full_path``, or, when the tool
    has no handlers and nobody listens, the tool itself (no handler input, no
    before-output to build)."""
    bare = not (chain.before or chain.approvers or chain.after)
    bus = rt.bus

    async def core(ctx: ToolContext) -> None:
        try:
            if bare and not bus.wanted:
                args = ctx.args
                if type(args) is not dict:
                    _check_rewritten_args(ToolBeforeOutput(args=args), args)
                # the tool, inline: the "middleware layer" rows (no coroutine more)
                try:
                    value = ctx.call(args)
                    if type(value) is CoroutineType or isawaitable(value):
                        value = await value
                except _ABORTS:
                    raise
                except Exception as exc:
                    ctx.result = error_result(exc)
                else:
                    ctx.result = ToolResult(output=value)
            else:
                ctx.result = await full_path(rt, chain, ctx)
        except Exception as exc:
            # on its way to the caller: no middleware applies its policy to it
            ctx._escaping = exc
            raise

    return core


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
