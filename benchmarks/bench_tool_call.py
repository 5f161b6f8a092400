"""Per-tool-call overhead of interpose, against its floor, in one run.

What it measures (ns per tool call, every case driven the same way: an ``async def``
loop that awaits the thing ``n`` times, run with ``loop.run_until_complete`` on one
asyncio event loop, timed inside the coroutine with ``time.perf_counter_ns``):

- floor: ``await tool(args)``, where ``async def tool(args): return args``;
- references for "each sync interceptor costs at most 1.5x a plain Python function call
  in a loop": the per-function cost of ``for fn in fns: fn(inp, out)`` (the slope from
  1 to 10 functions: one iteration of the loop plus the call; the target's reference),
  and a plain call ``h(inp, out)`` net of the empty loop (stricter; informational);
- interpose, empty pipeline (``Pipeline(builtins=False, tracing="off")``, no
  subscribers): ``await pipe.call_tool("exec", args, call=tool)``; target: at most
  1 us above the floor (and issue 11's 0.5 us); for information, a hand-written
  wrapper with ``call_tool``'s shape, ``async def call(name, args, *, call): return
  ToolResult(output=await call(args))``, the least such an API costs;
- interpose with 1, 5, 10 sync ``tool.before`` interceptors ``def h(inp, out): pass``;
  target: the slope ``(t_10 - t_1) / 9`` per interceptor is at most 1.5x the per-function
  cost of the handler loop; ``(t_N - t_empty) / N`` and the fixed cost
  ``t_1 - t_empty - slope`` (what having any chain at all costs) are informational; and
  10 interceptors whose tool matcher excludes the called tool (the chain compiles to
  empty);
- pluggy with 1, 5, 10 hookimpls doing the same (``pm.hook.tool_before(inp=, out=)``
  then ``await tool(args)``); target: interpose with 10 interceptors is faster;
- interpose with 1, 5, 10 ``tool``-stage middleware layers
  ``async def mw(ctx, call_next): await call_next()``, with the stage's default
  ``on_error="block"`` (a guarded layer) and with ``on_error="raise"``, against the
  onion a user would write by hand, which passes ``ctx`` down and allocates nothing per
  layer: ``async def mw(ctx, call_next): return await call_next(ctx)``, each layer a
  function ``lambda ctx: mw(ctx, inner)`` built once (the reference); target: the slope
  per layer is no more than that onion's slope; ``(t_N - t_empty) / N`` against the
  onion's ``(t_N - t_0) / N`` and the fixed cost are informational, and so is a
  Starlette-style closure onion (``await mw(ctx, lambda: inner(ctx))``, a closure per
  layer per call) calling the interpose ``mw``, and so is the same allocation-free onion
  with a hand-written guard around each layer (a coroutine ``try: await mw(ctx, inner)
  except Exception: <fail closed>``): the least a fail-closed layer costs, since
  catching a layer's failure before the layer outside it sees it takes a frame between
  the two;
- interpose with 1, 5, 10 async interceptors ``async def h(inp, out): pass``, with the
  default ``interceptor_timeout=5.0`` and with ``interceptor_timeout=None``;
  informational;
- pairs of ``tool.before`` + ``tool.after`` handlers (1 and 10 pairs): sync, async not
  suspending with the default timeout (target: the slope per pair is at most 2x the
  sync pair's), async not suspending without a timeout (the difference per pair is
  what the timeout costs handlers that do not wait; informational), and async handlers
  that suspend once (``await asyncio.sleep(0)``) with and without the default timeout
  (their difference per handler is what the timeout machinery costs a handler that
  waits; target: at most 2 us); for information, the same pairs called by hand
  (``fn(inp, out)`` and ``await fn(inp, out)`` around the tool), whose async pair is
  the least an async pair can cost;
- with an OpenTelemetry SDK provider (a batch processor exporting to a discarding
  exporter when flushed, outside the timed loop) and ``tracing="interceptor"``: 1 and 10
  sync interceptors, each a traced layer (an interceptor span), against a bare SDK span
  with 5 attributes made on the same provider; target: a traced layer at most 1.2x the
  bare span;
- one sync interceptor with one sync observer subscribed to ``tool_exec_end``, or to
  every kind, calling ``pipe.call_tool`` (a one-call turn each) or ``turn.call_tool``
  inside one turn; timed up to the end of ``async with pipe`` (every event delivered);
  informational;
- a pipeline of 10 sync interceptors on ``exec`` whose registry changes before every
  call (one handler for another tool registered and removed), so every call recompiles
  the chain; informational.

Methodology: every case is first calibrated to a loop count ``n`` whose run lasts about
``--target-ms``; then all cases are warmed up; then each round runs every case once,
with the garbage collector disabled during the timed loop: the groups of cases that
are compared with each other (``GROUPS``) in a shuffled order, the cases of a group
one after the other in a shuffled order.  A case's ns/call is the median over rounds;
the minimum and quartiles go to ``--json``.  A derived value (a difference, a slope, a
ratio) is computed in each round from that round's samples, and the table shows and
checks its median over rounds: a burst of load from other processes then lifts both
sides of a comparison in the round it hits, instead of one side of a ratio of
medians.  Ratios compare numbers measured in the same run, so they hold on any machine.

Run it with ``interpose bench [--quick] [--plot out.png]`` or
``python benchmarks/bench_tool_call.py [--quick] [--json out.json] [--plot out.png]``;
``--plot`` draws ns per call against the number of layers of each mechanism and
reference (it needs matplotlib: ``pip install 'interpose[plot]'``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import anyio
import pluggy
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

import interpose
from interpose import Pipeline, ToolResult

# What the timed loops read: wall time by default; ``--clock cpu`` reads the process's CPU
# time instead, for a machine shared with other work (no case blocks or sleeps, so the
# two agree on a quiet machine, and CPU time leaves out the time other processes ran).
clock: Callable[[], int] = time.perf_counter_ns

Loop = Callable[[int], Coroutine[Any, Any, int]]
"""A timed case: ``await loop(n)`` runs the operation n times, returns elapsed ns."""

Args = dict[str, Any]
DEPTHS = (1, 5, 10)
PAIRS = (1, 10)
PAIR_KEYS = {
    "spair": "sync",
    "apair": "async, 5s",
    "apairnt": "async, none",
    "suspair": "suspending, 5s",
    "suspairnt": "suspending, none",
}
TOOL = "exec"
ARGS: Args = {"command": "ls -la", "cwd": "/tmp"}


# -- the operations being measured ------------------------------------------------------


async def tool(args: Args) -> Args:
    """The tool of every case: the cheapest awaitable that does something with args."""
    return args


def sync_handler(inp: object, out: object) -> None:
    """A sync interceptor (and the plain function of the reference call)."""


async def async_handler(inp: object, out: object) -> None:
    """An async interceptor."""


async def mw(ctx: object, call_next: Callable[[], Awaitable[None]]) -> None:
    """A middleware layer that only passes the call through."""
    await call_next()


async def suspending_handler(inp: object, out: object) -> None:
    """An async interceptor that waits once: one trip through the event loop."""
    await asyncio.sleep(0)


async def free_mw(ctx: _Ctx, call_next: App) -> None:
    """The hand-written onion's layer: passes ``ctx`` down, allocates nothing."""
    return await call_next(ctx)


class _Payload:
    """Stand-in inputs/outputs for the plain-call and pluggy cases."""

    __slots__ = ("args", "block", "result")

    def __init__(self) -> None:
        self.args = ARGS
        self.block = False
        self.result: object = None


# -- building the cases -------------------------------------------------------------------


def floor_case() -> Loop:
    async def loop(n: int) -> int:
        t = tool
        args = ARGS
        start = clock()
        for _ in range(n):
            await t(args)
        return clock() - start

    return loop


def empty_loop_case() -> Loop:
    async def loop(n: int) -> int:
        start = clock()
        for _ in range(n):
            pass
        return clock() - start

    return loop


def plain_call_case() -> Loop:
    async def loop(n: int) -> int:
        h = sync_handler
        inp, out = _Payload(), _Payload()
        start = clock()
        for _ in range(n):
            h(inp, out)
        return clock() - start

    return loop


def handler_loop_case(depth: int) -> Loop:
    """The least any dispatcher pays: ``for fn in fns: fn(inp, out)`` over ``depth`` fns."""

    async def loop(n: int) -> int:
        fns = (sync_handler,) * depth
        inp, out = _Payload(), _Payload()
        start = clock()
        for _ in range(n):
            for fn in fns:
                fn(inp, out)
        return clock() - start

    return loop


def calls_case(call_tool: Callable[..., Awaitable[Any]]) -> Loop:
    """``await call_tool(TOOL, args, call=tool)``, ``n`` times."""

    async def loop(n: int) -> int:
        t = tool
        args = ARGS
        start = clock()
        for _ in range(n):
            await call_tool(TOOL, args, call=t)
        return clock() - start

    return loop


def pipeline_case(pipe: Pipeline) -> Loop:
    return calls_case(pipe.call_tool)


def observe(event: object) -> None:
    """A sync observer that does nothing with the event."""


def subscribed_case(pipe: Pipeline, in_turn: bool) -> Loop:
    """``n`` calls inside ``async with pipe`` (observers run and are drained before the
    clock stops), through ``pipe.call_tool`` or through ``turn.call_tool`` of one turn."""

    async def loop(n: int) -> int:
        t = tool
        args = ARGS
        start = clock()
        async with pipe:
            if in_turn:
                async with pipe.turn() as turn:
                    call_tool = turn.call_tool
                    for _ in range(n):
                        await call_tool(TOOL, args, call=t)
            else:
                call_tool = pipe.call_tool
                for _ in range(n):
                    await call_tool(TOOL, args, call=t)
        return clock() - start

    return loop


def recompile_case(pipe: Pipeline) -> Loop:
    """Register and remove a handler for another tool, then call: every call recompiles."""

    async def loop(n: int) -> int:
        call_tool = pipe.call_tool
        registry = pipe.registry
        intercept = pipe.intercept("tool.before", id="churn", tools="read")
        t = tool
        args = ARGS
        start = clock()
        for _ in range(n):
            intercept(sync_handler)
            registry.remove("churn")
            await call_tool(TOOL, args, call=t)
        return clock() - start

    return loop


def interceptor_pipeline(
    handler: Callable[[object, object], object],
    depth: int,
    timeout: float | None = 5.0,
    tools: str | None = None,
) -> Pipeline:
    pipe = Pipeline(builtins=False, tracing="off", interceptor_timeout=timeout)
    for k in range(depth):
        pipe.intercept("tool.before", id=f"i{k}", tools=tools)(handler)
    return pipe


def middleware_pipeline(depth: int, on_error: Literal["block", "skip", "raise"] | None) -> Pipeline:
    pipe = Pipeline(builtins=False, tracing="off")
    for k in range(depth):
        pipe.middleware("tool", id=f"m{k}", on_error=on_error)(mw)
    return pipe


def pluggy_case(depth: int) -> Loop:
    project = "interpose_bench"
    hookspec = pluggy.HookspecMarker(project)
    hookimpl = pluggy.HookimplMarker(project)

    class Spec:
        @hookspec
        def tool_before(self, inp: object, out: object) -> None:
            """Called before a tool runs."""

    class Plugin:
        @hookimpl
        def tool_before(self, inp: object, out: object) -> None:
            pass

    pm = pluggy.PluginManager(project)
    pm.add_hookspecs(Spec)
    for k in range(depth):
        pm.register(Plugin(), name=f"p{k}")
    if len(pm.hook.tool_before.get_hookimpls()) != depth:
        raise RuntimeError("pluggy did not register every hookimpl")

    async def loop(n: int) -> int:
        hook = pm.hook.tool_before
        t = tool
        args = ARGS
        inp, out = _Payload(), _Payload()
        start = clock()
        for _ in range(n):
            hook(inp=inp, out=out)
            await t(args)
        return clock() - start

    return loop


class _Ctx:
    """The per-call context of the hand-written onion."""

    __slots__ = ("args", "result")

    def __init__(self, args: Args) -> None:
        self.args = args
        self.result: object = None


App = Callable[[_Ctx], Awaitable[None]]


def _layer(inner: App) -> App:
    async def layer(ctx: _Ctx) -> None:
        await mw(ctx, lambda: inner(ctx))

    return layer


def _free_layer(inner: App) -> App:
    def layer(ctx: _Ctx) -> Awaitable[None]:
        return free_mw(ctx, inner)

    return layer


def _onion_case(layer: Callable[[App], App], depth: int) -> Loop:
    """``depth`` layers made by ``layer`` around the tool, one fresh ``_Ctx`` per call."""

    async def core(ctx: _Ctx) -> None:
        ctx.result = await tool(ctx.args)

    app: App = core
    for _ in range(depth):
        app = layer(app)

    async def loop(n: int) -> int:
        a = app
        args = ARGS
        start = clock()
        for _ in range(n):
            await a(_Ctx(args))
        return clock() - start

    return loop


def free_onion_case(depth: int) -> Loop:
    """The allocation-free onion of ``depth`` layers of ``free_mw`` around the tool."""
    return _onion_case(_free_layer, depth)


def _guarded_layer(inner: App) -> App:
    # a fail-closed layer written by hand: a failure of the middleware becomes the
    # call's result and the layer outside it goes on.  Catching it takes a frame of
    # its own between the two middleware coroutines: this coroutine
    async def layer(ctx: _Ctx) -> None:
        try:
            await free_mw(ctx, inner)
        except Exception as exc:
            ctx.result = exc

    return layer


def guarded_onion_case(depth: int) -> Loop:
    """The allocation-free onion with a hand-written guard around each layer."""
    return _onion_case(_guarded_layer, depth)


def hand_pairs_case(handler: Callable[[object, object], Any], pairs: int) -> Loop:
    """``pairs`` before and after handlers called by hand around the tool: a plain call
    each if ``handler`` is sync, an ``await`` each if it is async."""
    before = after = (handler,) * pairs

    if asyncio.iscoroutinefunction(handler):

        async def loop(n: int) -> int:
            t = tool
            args = ARGS
            inp, out = _Payload(), _Payload()
            start = clock()
            for _ in range(n):
                for fn in before:
                    await fn(inp, out)
                await t(args)
                for fn in after:
                    await fn(inp, out)
            return clock() - start

        return loop

    async def sync_loop(n: int) -> int:
        t = tool
        args = ARGS
        inp, out = _Payload(), _Payload()
        start = clock()
        for _ in range(n):
            for fn in before:
                fn(inp, out)
            await t(args)
            for fn in after:
                fn(inp, out)
        return clock() - start

    return sync_loop


async def wrapper(name: str, args: Args, *, call: Callable[[Args], Awaitable[Any]]) -> ToolResult:
    """The least an API like ``call_tool`` costs: a coroutine taking the name, the args
    and the tool by keyword, returning the tool's output in a result struct."""
    return ToolResult(output=await call(args))


def pair_pipeline(
    handler: Callable[[object, object], object], pairs: int, timeout: float | None = 5.0
) -> Pipeline:
    """``pairs`` tool.before + tool.after pairs of ``handler``."""
    pipe = Pipeline(builtins=False, tracing="off", interceptor_timeout=timeout)
    for k in range(pairs):
        pipe.intercept("tool.before", id=f"b{k}")(handler)
        pipe.intercept("tool.after", id=f"a{k}")(handler)
    return pipe


class _Discard(SpanExporter):
    """Drops every batch of spans."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class _Sdk:
    """An SDK tracer provider whose batch processor exports (drops) only when flushed:
    the timed region is span creation and ending, as users pay it per call."""

    def __init__(self) -> None:
        self.processor = BatchSpanProcessor(
            _Discard(),
            max_queue_size=1 << 20,
            max_export_batch_size=1 << 20,
            schedule_delay_millis=86_400_000.0,
        )
        self.provider = TracerProvider()
        self.provider.add_span_processor(self.processor)

    def flush(self) -> None:
        self.processor.force_flush()


BARE_ATTRS = {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": TOOL,
    "interpose.hook": "tool.before",
    "interpose.interceptor.id": "i0",
    "interpose.decision": "continue",
}


def bare_span_case(sdk: _Sdk) -> Loop:
    """One SDK span with 5 attributes per iteration, on the traced cases' provider."""
    tracer = sdk.provider.get_tracer("bench")

    async def loop(n: int) -> int:
        start_span = tracer.start_as_current_span
        attrs = BARE_ATTRS
        sdk.flush()
        start = clock()
        for _ in range(n):
            with start_span("tool.before i0", attributes=attrs):
                pass
        elapsed = clock() - start
        sdk.flush()
        return elapsed

    return loop


def traced_case(pipe: Pipeline, sdk: _Sdk) -> Loop:
    inner = pipeline_case(pipe)

    async def loop(n: int) -> int:
        sdk.flush()
        elapsed = await inner(n)
        sdk.flush()
        return elapsed

    return loop


def onion_case(depth: int) -> Loop:
    """Starlette-style closure onion of ``depth`` layers of ``mw`` around the tool."""
    return _onion_case(_layer, depth)


# The cases each derived value compares, by key without its depth: each group runs
# together in every round (see ``measure``).  A key not named here runs in a group of
# its own kind.
GROUPS: tuple[frozenset[str], ...] = (
    frozenset({"floor", "loop", "call", "fns", "empty", "wrapper", "other", "sync", "pluggy"}),
    frozenset({"free", "onion", "guard", "mw", "mwraise"}),
    frozenset({"async", "asyncnt"}),
    frozenset({"spair", "apair", "apairnt", "suspair", "suspairnt", "hsync", "hasync"}),
    frozenset({"barespan", "traced"}),
)


def group_of(case: Case) -> int:
    """The index in ``GROUPS`` of the group of ``case`` (``len(GROUPS)`` for the rest)."""
    kind = case.key.rstrip("0123456789")
    return next((i for i, members in enumerate(GROUPS) if kind in members), len(GROUPS))


@dataclass
class Case:
    key: str
    label: str
    loop: Loop
    n: int = 0
    samples: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


def build_cases() -> list[Case]:
    """Every case of the run, in table order.

    Raises:
        RuntimeError: a pipeline does not return the tool's output unchanged.
    """
    cases = [
        Case("floor", "floor: await tool(args)", floor_case()),
        Case("loop", "empty loop iteration", empty_loop_case()),
        Case("call", "plain call h(inp, out) (with loop)", plain_call_case()),
        Case("fns1", "handler loop, 1 fn", handler_loop_case(1)),
        Case("fns10", "handler loop, 10 fns", handler_loop_case(10)),
    ]
    empty = Pipeline(builtins=False, tracing="off")
    pipes: list[Pipeline] = [empty]
    cases.append(Case("empty", "interpose, empty pipeline", pipeline_case(empty)))
    cases.append(Case("wrapper", "hand-written call wrapper", calls_case(wrapper)))
    for d in DEPTHS:
        pipe = interceptor_pipeline(sync_handler, d)
        pipes.append(pipe)
        cases.append(Case(f"sync{d}", f"interpose, {d} sync interceptors", pipeline_case(pipe)))
    for d in DEPTHS:
        cases.append(Case(f"pluggy{d}", f"pluggy, {d} hookimpls", pluggy_case(d)))
    pipe = interceptor_pipeline(sync_handler, 10, tools="read")
    pipes.append(pipe)
    cases.append(Case("other10", "interpose, 10 sync on another tool", pipeline_case(pipe)))
    for d in DEPTHS:
        pipe = middleware_pipeline(d, None)
        pipes.append(pipe)
        cases.append(Case(f"mw{d}", f"interpose, {d} middleware (block)", pipeline_case(pipe)))
    for d in DEPTHS:
        pipe = middleware_pipeline(d, "raise")
        pipes.append(pipe)
        cases.append(Case(f"mwraise{d}", f"interpose, {d} middleware (raise)", pipeline_case(pipe)))
    cases.append(Case("onion0", "closure onion, 0 layers (core)", onion_case(0)))
    for d in DEPTHS:
        cases.append(Case(f"onion{d}", f"closure onion, {d} layers", onion_case(d)))
    cases.append(Case("free0", "allocation-free onion, 0 layers", free_onion_case(0)))
    for d in DEPTHS:
        cases.append(Case(f"free{d}", f"allocation-free onion, {d} layers", free_onion_case(d)))
    for d in DEPTHS:
        cases.append(Case(f"guard{d}", f"guarded onion, {d} layers", guarded_onion_case(d)))
    for key, handler in (("hsync", sync_handler), ("hasync", async_handler)):
        for d in PAIRS:
            label = f"hand-written {'async' if key == 'hasync' else 'sync'} pairs, {d}"
            cases.append(Case(f"{key}{d}", label, hand_pairs_case(handler, d)))
    for key, label, handler, timeout in (
        ("spair", "sync pairs", sync_handler, 5.0),
        ("apair", "async pairs (5s)", async_handler, 5.0),
        ("apairnt", "async pairs (no timeout)", async_handler, None),
        ("suspair", "suspending pairs (5s)", suspending_handler, 5.0),
        ("suspairnt", "suspending pairs (no t/o)", suspending_handler, None),
    ):
        for d in PAIRS:
            pipe = pair_pipeline(handler, d, timeout)
            pipes.append(pipe)
            cases.append(Case(f"{key}{d}", f"interpose, {d} {label}", pipeline_case(pipe)))
    sdk = _Sdk()
    cases.append(Case("barespan", "bare SDK span, 5 attributes", bare_span_case(sdk)))
    for d in PAIRS:
        pipe = Pipeline(builtins=False, tracing="interceptor", tracer_provider=sdk.provider)
        for k in range(d):
            pipe.intercept("tool.before", id=f"i{k}")(sync_handler)
        pipes.append(pipe)
        cases.append(
            Case(f"traced{d}", f"interpose, {d} traced sync layers", traced_case(pipe, sdk))
        )
    for d in DEPTHS:
        pipe = interceptor_pipeline(async_handler, d, 5.0)
        pipes.append(pipe)
        cases.append(Case(f"async{d}", f"interpose, {d} async (timeout 5s)", pipeline_case(pipe)))
    for d in DEPTHS:
        pipe = interceptor_pipeline(async_handler, d, None)
        pipes.append(pipe)
        cases.append(Case(f"asyncnt{d}", f"interpose, {d} async (no timeout)", pipeline_case(pipe)))
    for key, label, kinds, in_turn in (
        ("subend", "1 sync + observer of tool_exec_end", {"tool_exec_end"}, False),
        ("suball", "1 sync + observer of every kind", None, False),
        ("turnend", "1 sync + tool_exec_end, in 1 turn", {"tool_exec_end"}, True),
    ):
        pipe = interceptor_pipeline(sync_handler, 1)
        pipe.subscribe(observe, events=kinds)
        cases.append(Case(key, f"interpose, {label}", subscribed_case(pipe, in_turn)))
        _check(pipe, subscribed_case(pipe, in_turn))
    pipe = interceptor_pipeline(sync_handler, 10)
    pipes.append(pipe)
    cases.append(Case("recompile", "interpose, 10 sync, registry changed", recompile_case(pipe)))
    for pipe in pipes:
        _check(pipe)
    return cases


def _check(pipe: Pipeline, loop: Loop | None = None) -> None:
    """Run one call (through ``loop`` if given) and check that the tool ran.

    Raises:
        RuntimeError: the call did not return the tool's output unchanged, or an
            observer did not see exactly one call end "ok".
    """
    seen: list[object] = []

    def record(event: object) -> None:
        seen.append(event)

    async def once() -> None:
        if loop is not None:  # the observers' case: it must run and deliver an event
            sub = pipe.subscribe(record, events={"tool_exec_end"})
            try:
                await loop(1)
            finally:
                pipe.bus.unsubscribe(sub)
            if [getattr(e, "status", None) for e in seen] != ["ok"]:
                raise RuntimeError(f"{pipe!r}: observed {seen!r}, not one ok tool_exec_end")
            return
        result = await pipe.call_tool(TOOL, ARGS, call=tool)
        if result.status != "ok" or result.output is not ARGS:
            raise RuntimeError(f"{pipe!r} returned {result!r}")

    asyncio.run(once())


# -- timing -------------------------------------------------------------------------------


def run_once(loop: asyncio.AbstractEventLoop, case: Case, n: int) -> int:
    """Run ``case`` for ``n`` iterations with the GC off; returns elapsed ns."""
    gc.collect()
    gc.disable()
    try:
        return loop.run_until_complete(case.loop(n))
    finally:
        gc.enable()


def calibrate(loop: asyncio.AbstractEventLoop, case: Case, target_ns: int) -> int:
    """The loop count whose run lasts about ``target_ns``."""
    n = 16
    while True:
        elapsed = run_once(loop, case, n)
        if elapsed >= target_ns // 4 or n >= 1 << 26:
            break
        n *= 4
    return max(16, int(n * target_ns / max(elapsed, 1)))


def measure(
    cases: Sequence[Case],
    rounds: int,
    target_ms: float,
    group: Callable[[Case], int] | None = None,
) -> None:
    """Calibrate, warm up and time every case ``rounds`` times, interleaved: each round
    runs every case once, in a shuffled order.  With ``group``, the cases of a group
    run one after the other (the groups in a shuffled order, the cases of each in a
    shuffled order), so that the cases compared with each other are timed close
    together in every round."""
    target_ns = int(target_ms * 1e6)
    loop = asyncio.new_event_loop()
    try:
        for case in cases:
            case.n = calibrate(loop, case, target_ns)
        for case in cases:  # warm-up: caches, compiled chains, branch predictors
            run_once(loop, case, case.n)
        groups: dict[int, list[Case]] = {}
        for case in cases:
            groups.setdefault(group(case) if group is not None else 0, []).append(case)
        order = list(groups.values())
        rng = random.Random(0)
        for _ in range(rounds):
            rng.shuffle(order)
            for members in order:
                rng.shuffle(members)
                for case in members:
                    case.samples.append(run_once(loop, case, case.n) / case.n)
    finally:
        loop.close()


# -- timing, for a benchmark that runs in its own event loop (anyio.run) -----------------


async def run_once_async(loop: Loop, n: int) -> int:
    """``await loop(n)`` with the GC off; returns what it returns (elapsed ns)."""
    gc.collect()
    gc.disable()
    try:
        return await loop(n)
    finally:
        gc.enable()


async def time_rounds(cases: Sequence[Case], rounds: int, per: int = 1) -> None:
    """Time every (calibrated, warmed-up) case ``rounds`` times, interleaved in a
    shuffled order; a sample is the time of one of ``case.n`` iterations over ``per``."""
    order = list(cases)
    rng = random.Random(0)
    for _ in range(rounds):
        rng.shuffle(order)
        for case in order:
            case.samples.append(await run_once_async(case.loop, case.n) / case.n / per)


def paired_ratio(a: Case, b: Case) -> float:
    """The median over rounds of a's time over b's in the same round."""
    return statistics.median(x / y for x, y in zip(a.samples, b.samples, strict=True))


def ratio_lines(rows: Sequence[Mapping[str, Any]], width: int) -> list[str]:
    """The table lines of result rows (``case``, ``ratio``, ``target``, ``result``)."""
    return [
        f"{row['case']:<{width}} {row['ratio']:.2f}x   target {row['target']}   {row['result']}"
        for row in rows
    ]


# -- reporting ----------------------------------------------------------------------------


@dataclass
class Row:
    case: str
    ns_per_call: float | None
    above_floor: float | None
    measure: str = ""
    value: float | None = None
    ratio: float | None = None
    target: str = ""
    result: str = ""


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def _meets(target: str, value: float | None, ratio: float | None) -> bool | None:
    """Whether ``value`` (a target in ns) or ``ratio`` (a target in x) meets ``target``
    ("<= 1000 ns", "< 1.0x", ...); None for a row without one."""
    parts = target.split()
    if len(parts) < 2 or parts[0] not in ("<=", "<"):
        return None
    bound_text = parts[1].removesuffix("x")
    got = ratio if bound_text != parts[1] else value
    if got is None:
        return None
    bound = float(bound_text)
    return got <= bound if parts[0] == "<=" else got < bound


def analyse(cases: list[Case]) -> list[Row]:
    """The table rows, with targets checked.

    A case's ns/call is its median over rounds.  A derived value (a difference, a
    slope, a ratio) is computed in every round from that round's samples, and its
    median over rounds is shown and checked: the cases a value compares run next to
    each other in each round (see ``GROUPS``), so a burst of load from other processes
    lifts both sides of a comparison instead of one.

    Raises:
        KeyError: a case the table needs was not measured.
    """
    medians = rows_of({c.key: c.median for c in cases}, cases)
    rounds = min(len(c.samples) for c in cases)
    per_round: list[list[Row]] = []
    for r in range(rounds):
        try:
            per_round.append(rows_of({c.key: c.samples[r] for c in cases}, cases))
        except ZeroDivisionError:  # a reference that measured no difference in this round
            continue
    combined: list[Row] = []
    for i, row in enumerate(medians):
        values = [v for rows in per_round if (v := rows[i].value) is not None]
        ratios = [x for rows in per_round if (x := rows[i].ratio) is not None]
        row.value = statistics.median(values) if values else None
        row.ratio = statistics.median(ratios) if ratios else None
        met = _meets(row.target, row.value, row.ratio)
        if met is not None:
            row.result = _verdict(met)
        combined.append(row)
    return combined


def rows_of(t: Mapping[str, float], cases: Sequence[Case]) -> list[Row]:
    """The table rows of one set of times per case (medians, or one round's samples).

    Raises:
        KeyError: a case the table needs was not measured.
    """
    floor, empty = t["floor"], t["empty"]
    plain = t["call"] - t["loop"]
    per_fn = (t["fns10"] - t["fns1"]) / 9  # the target's reference: one iteration + call
    rows: list[Row] = [
        Row("floor: await tool(args)", floor, 0.0),
        Row("empty loop iteration", t["loop"], None),
        Row("plain call h(inp, out), net of loop", plain, None, "reference (strict)", plain),
        Row(
            "handler loop: for fn in fns: fn(inp, out)",
            None,
            None,
            "per fn, slope 1->10 (reference)",
            per_fn,
        ),
    ]
    empty_over = empty - floor
    rows.append(
        Row(
            "interpose, empty pipeline",
            empty,
            empty_over,
            "above floor",
            empty_over,
            None,
            "<= 1000 ns",
        )
    )
    rows.append(
        Row(
            "  same, against issue 11's bound",
            None,
            None,
            "above floor",
            empty_over,
            None,
            "<= 500 ns",
        )
    )
    wrapped = t["wrapper"] - floor
    rows.append(
        Row(
            "hand-written call wrapper",
            t["wrapper"],
            wrapped,
            "above floor (what any such API costs)",
            wrapped,
        )
    )
    rows.append(
        Row(
            "  empty pipeline vs the wrapper",
            None,
            None,
            "above floor, net of the wrapper",
            empty_over - wrapped,
            empty_over / wrapped,
            "info",
        )
    )
    rows.append(
        Row(
            "interpose, 10 sync on another tool",
            t["other10"],
            t["other10"] - floor,
            "vs empty pipeline (matcher)",
            t["other10"] - empty,
            t["other10"] / empty,
            "info",
        )
    )
    # sync interceptors: the slope is the criterion; (t_N - t_empty) / N and the fixed
    # cost show what the first registration switches on
    for d in DEPTHS:
        per = (t[f"sync{d}"] - empty) / d
        rows.append(
            Row(
                f"interpose, {d} sync interceptor{'s' if d > 1 else ''}",
                t[f"sync{d}"],
                t[f"sync{d}"] - floor,
                "(t_N - t_empty)/N vs loop per fn",
                per,
                per / per_fn,
                "info",
            )
        )
    slope = (t["sync10"] - t["sync1"]) / 9
    rows.append(
        Row(
            "  slope 1->10 per interceptor",
            None,
            None,
            "vs handler loop per fn",
            slope,
            slope / per_fn,
            "<= 1.5x",
        )
    )
    rows.append(
        Row(
            "  same slope",
            None,
            None,
            "vs plain call net of loop",
            slope,
            slope / plain,
            "info",
        )
    )
    rows.append(
        Row(
            "  fixed cost of a sync chain",
            None,
            None,
            "t_1 - t_empty - slope",
            t["sync1"] - empty - slope,
            None,
            "info",
        )
    )
    for d in DEPTHS:
        whole = t[f"sync{d}"] / t[f"pluggy{d}"]
        rows.append(
            Row(
                f"pluggy, {d} hookimpls",
                t[f"pluggy{d}"],
                t[f"pluggy{d}"] - floor,
                f"interpose {d} / pluggy {d}, whole call",
                t[f"sync{d}"],
                whole,
                "< 1.0x" if d == 10 else "info",
            )
        )
    over = (t["sync10"] - floor) / (t["pluggy10"] - floor)
    rows.append(
        Row(
            "  interpose 10 vs pluggy 10",
            None,
            None,
            "overhead above floor",
            t["sync10"] - floor,
            over,
            "< 1.0x",
        )
    )
    # middleware: the slope per layer against the allocation-free onion's is the
    # criterion; the closure onion (a closure per layer per call) is informational
    free_per = {d: (t[f"free{d}"] - t["free0"]) / d for d in DEPTHS}
    onion_per = {d: (t[f"onion{d}"] - t["onion0"]) / d for d in DEPTHS}
    free_slope = (t["free10"] - t["free1"]) / 9
    onion_slope = (t["onion10"] - t["onion1"]) / 9
    rows.append(Row("allocation-free onion, 0 layers (core + ctx)", t["free0"], t["free0"] - floor))
    for d in DEPTHS:
        rows.append(
            Row(
                f"allocation-free onion, {d} layers",
                t[f"free{d}"],
                t[f"free{d}"] - floor,
                "(t_N - t_0)/N (reference)",
                free_per[d],
            )
        )
    rows.append(Row("  slope 1->10 per layer", None, None, "onion slope (reference)", free_slope))
    rows.append(Row("closure onion, 0 layers (core + ctx)", t["onion0"], t["onion0"] - floor))
    for d in DEPTHS:
        rows.append(
            Row(
                f"closure onion, {d} layers",
                t[f"onion{d}"],
                t[f"onion{d}"] - floor,
                "(t_N - t_0)/N",
                onion_per[d],
                onion_per[d] / free_per[d],
                "info",
            )
        )
    rows.append(
        Row(
            "  slope 1->10 per layer",
            None,
            None,
            "vs allocation-free onion slope",
            onion_slope,
            onion_slope / free_slope,
            "info",
        )
    )
    guard_slope = (t["guard10"] - t["guard1"]) / 9
    for d in DEPTHS:
        per = (t[f"guard{d}"] - t["free0"]) / d
        rows.append(
            Row(
                f"guarded onion, {d} layers",
                t[f"guard{d}"],
                t[f"guard{d}"] - floor,
                "(t_N - t_0)/N vs onion /N",
                per,
                per / free_per[d],
                "info",
            )
        )
    rows.append(
        Row(
            "  slope 1->10 per layer (a guard each)",
            None,
            None,
            "vs allocation-free onion slope",
            guard_slope,
            guard_slope / free_slope,
            "info",
        )
    )
    for key, label in (("mw", "block"), ("mwraise", "raise")):
        for d in DEPTHS:
            per = (t[f"{key}{d}"] - empty) / d
            rows.append(
                Row(
                    f"interpose, {d} middleware ({label})",
                    t[f"{key}{d}"],
                    t[f"{key}{d}"] - floor,
                    "(t_N - t_empty)/N vs onion /N",
                    per,
                    per / free_per[d],
                    "info",
                )
            )
        slope = (t[f"{key}10"] - t[f"{key}1"]) / 9
        rows.append(
            Row(
                f"  slope 1->10 per layer ({label})",
                None,
                None,
                "vs allocation-free onion slope",
                slope,
                slope / free_slope,
                "<= 1.0x",
            )
        )
        if key == "mw":  # a guarded layer, against the hand-written guarded layer
            rows.append(
                Row(
                    "  same slope (block)",
                    None,
                    None,
                    "vs guarded onion slope",
                    slope,
                    slope / guard_slope,
                    "info",
                )
            )
        rows.append(
            Row(
                f"  same slope ({label})",
                None,
                None,
                "vs closure onion slope",
                slope,
                slope / onion_slope,
                "info",
            )
        )
        rows.append(
            Row(
                f"  fixed cost of a middleware chain ({label})",
                None,
                None,
                "t_1 - t_empty - slope",
                t[f"{key}1"] - empty - slope,
                None,
                "info",
            )
        )
    for key, label in (("async", "timeout 5s"), ("asyncnt", "no timeout")):
        for d in DEPTHS:
            rows.append(
                Row(
                    f"interpose, {d} async ({label})",
                    t[f"{key}{d}"],
                    t[f"{key}{d}"] - floor,
                    "(t_N - t_empty)/N",
                    (t[f"{key}{d}"] - empty) / d,
                    None,
                    "info",
                )
            )
        slope = (t[f"{key}10"] - t[f"{key}1"]) / 9
        rows.append(
            Row(
                f"  slope 1->10 async ({label})",
                None,
                None,
                "per interceptor vs loop per fn",
                slope,
                slope / per_fn,
                "info",
            )
        )
    scope = (t["async10"] - t["asyncnt10"]) / 10
    rows.append(
        Row(
            "  timeout per async handler, not suspending",
            None,
            None,
            "timeout 5s - none",
            scope,
            None,
            "info",
        )
    )
    # pairs of tool.before + tool.after: the slope per pair
    lo, hi = PAIRS
    pair = {k: (t[f"{k}{hi}"] - t[f"{k}{lo}"]) / (hi - lo) for k in PAIR_KEYS}
    for key in PAIR_KEYS:
        for d in PAIRS:
            case = next(c for c in cases if c.key == f"{key}{d}")
            rows.append(Row(case.label, t[f"{key}{d}"], t[f"{key}{d}"] - floor))
        target = key == "apair"
        rows.append(
            Row(
                f"  per pair ({PAIR_KEYS[key]})",
                None,
                None,
                "vs sync pair",
                pair[key],
                pair[key] / pair["spair"],
                "<= 2.0x" if target else "info",
            )
        )
    hand = {k: (t[f"{k}{hi}"] - t[f"{k}{lo}"]) / (hi - lo) for k in ("hsync", "hasync")}
    for key in ("hsync", "hasync"):
        for d in PAIRS:
            case = next(c for c in cases if c.key == f"{key}{d}")
            rows.append(Row(case.label, t[f"{key}{d}"], t[f"{key}{d}"] - floor))
    rows.append(
        Row(
            "  per pair (hand-written sync)",
            None,
            None,
            "vs interpose sync pair",
            hand["hsync"],
            hand["hsync"] / pair["spair"],
            "info",
        )
    )
    rows.append(
        Row(
            "  per pair (hand-written async)",
            None,
            None,
            "vs interpose sync pair",
            hand["hasync"],
            hand["hasync"] / pair["spair"],
            "info",
        )
    )
    rows.append(
        Row(
            "  per pair (async, 5s)",
            None,
            None,
            "vs hand-written async pair",
            pair["apair"],
            pair["apair"] / hand["hasync"],
            "info",
        )
    )
    rows.append(
        Row(
            "  timeout per pair, not suspending",
            None,
            None,
            "async 5s - none, per pair",
            pair["apair"] - pair["apairnt"],
            pair["apair"] / pair["apairnt"],
            "info",
        )
    )
    waits = (pair["suspair"] - pair["suspairnt"]) / 2
    rows.append(
        Row(
            "  timeout per suspending handler",
            None,
            None,
            "(susp. 5s - none) / 2, per pair",
            waits,
            None,
            "<= 2000 ns",
        )
    )
    # a traced layer: one interceptor span, against a bare SDK span
    traced = (t[f"traced{hi}"] - t[f"traced{lo}"]) / (hi - lo)
    rows.append(Row("bare SDK span, 5 attributes", t["barespan"], None, "reference", t["barespan"]))
    for d in PAIRS:
        rows.append(
            Row(f"interpose, {d} traced sync layers", t[f"traced{d}"], t[f"traced{d}"] - floor)
        )
    rows.append(
        Row(
            "  per traced layer (interceptor)",
            None,
            None,
            "vs bare SDK span",
            traced,
            traced / t["barespan"],
            "<= 1.2x",
        )
    )
    # observers and registry changes, against one sync interceptor with neither
    for key in ("subend", "suball", "turnend"):
        case = next(c for c in cases if c.key == key)
        rows.append(
            Row(
                case.label,
                t[key],
                t[key] - floor,
                "vs 1 sync, nobody listening",
                t[key] - t["sync1"],
                t[key] / t["sync1"],
                "info",
            )
        )
    rows.append(
        Row(
            "interpose, 10 sync, registry changed",
            t["recompile"],
            t["recompile"] - floor,
            "vs 10 sync, chain cached",
            t["recompile"] - t["sync10"],
            t["recompile"] / t["sync10"],
            "info",
        )
    )
    return rows


def _num(x: float | None, fmt: str) -> str:
    return "" if x is None else format(x, fmt)


def render(rows: list[Row]) -> str:
    header = (
        f"{'case':<44} {'ns/call':>9} {'+floor':>9}  {'measure':<34} {'value ns':>9} "
        f"{'ratio':>8}  {'target':<10} {'result':<6}"
    )
    lines = [header, "-" * len(header)]
    for r in rows:
        lines.append(
            f"{r.case:<44} {_num(r.ns_per_call, '9.1f'):>9} {_num(r.above_floor, '9.1f'):>9}  "
            f"{r.measure:<34} {_num(r.value, '9.1f'):>9} "
            f"{_num(r.ratio, '5.2f') + ('x' if r.ratio is not None else ''):>8}  "
            f"{r.target:<10} {r.result:<6}".rstrip()
        )
    return "\n".join(lines)


def _cpu_model() -> str:
    """``platform.processor()``, or the model name from /proc/cpuinfo where that is empty."""
    name = platform.processor()
    if name and name != platform.machine():
        return name
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return name or "unknown"


def _revision() -> str:
    """The checkout's commit, with "+changes" if tracked files differ from it; or
    "unknown" outside a git checkout."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        head = subprocess.run(
            ["git", "-C", here, "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head}+changes" if dirty else head


def machine() -> dict[str, Any]:
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "interpose": getattr(interpose, "__version__", "unknown"),
        "revision": _revision(),
    }


# -- what every benchmark's command line, header and results file share ------------------


def option_parser(doc: str | None) -> argparse.ArgumentParser:
    """The options of every benchmark: --quick, --rounds, --target-ms, --json."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
    parser.add_argument("--quick", action="store_true", help="few short rounds (smoke test)")
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds per case")
    parser.add_argument("--target-ms", type=float, default=None, help="length of one timed run")
    parser.add_argument("--json", metavar="PATH", default=None, help="write results as JSON")
    return parser


def run_settings(
    opts: argparse.Namespace, rounds: int, target_ms: float, quick_target_ms: float = 2.0
) -> tuple[int, float]:
    """(rounds, target ms) of this run: the options, else the full or the quick defaults."""
    return (
        opts.rounds or (5 if opts.quick else rounds),
        opts.target_ms or (quick_target_ms if opts.quick else target_ms),
    )


def print_header(
    title: str, quick: bool, rounds: int, target_ms: float, per: str
) -> dict[str, Any]:
    """Print what is measured, on what, and how; returns the machine description."""
    info = machine()
    print(f"{title} ({'quick' if quick else 'full'} run)")
    print(
        f"Python {info['python']} ({info['implementation']}) on {info['platform']}; "
        f"processor: {info['processor']}; {info['cpu_count']} CPUs; "
        f"interpose {info['interpose']} at {info['revision']}"
    )
    print(f"{rounds} rounds x ~{target_ms:g} ms per case; {per}\n")
    return info


def write_results(
    path: str,
    info: dict[str, Any],
    rounds: int,
    target_ms: float,
    cases: Sequence[Case],
    rows: Sequence[Any],
    *,
    samples: bool = False,
    **extra: Any,
) -> None:
    """Write the run as JSON: every case (loop count, median, minimum, quartiles, and
    with ``samples`` every round's value) and every table row (dataclasses)."""

    def summary(c: Case) -> dict[str, Any]:
        found: dict[str, Any] = {
            "label": c.label,
            "n": c.n,
            "median_ns": c.median,
            "min_ns": min(c.samples),
            "quartiles_ns": statistics.quantiles(c.samples, n=4)
            if len(c.samples) > 1
            else [c.median] * 3,
        }
        if samples:
            found["samples_ns"] = c.samples
        return found

    payload = {
        "machine": info,
        "rounds": rounds,
        "target_ms": target_ms,
        **extra,
        "cases": {c.key: summary(c) for c in cases},
        "rows": [asdict(r) for r in rows],
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(payload, f, indent=2)


def child_bench_main(
    doc: str | None,
    argv: list[str] | None,
    children: Mapping[str, Callable[[], object]],
    title: str,
    bench: Callable[[int, float], Awaitable[dict[str, Any]]],
    render: Callable[[dict[str, Any]], str],
    *,
    rounds: int,
    target_ms: float,
    quick_target_ms: float,
) -> int:
    """The main body of a benchmark that starts children of its own script: with
    ``--child NAME`` be that child, else run ``bench`` (``rounds`` and ``target_ms``
    unless the options say otherwise), print ``render`` of its results and write
    them as JSON if asked.

    Raises:
        RuntimeError: ``bench`` finds a child or the system under test misbehaving.
        OSError: the JSON file cannot be written.
    """
    parser = option_parser(doc)
    parser.add_argument("--child", choices=sorted(children), help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.child:
        children[opts.child]()
        return 0
    rounds, target_ms = run_settings(opts, rounds, target_ms, quick_target_ms=quick_target_ms)
    info = print_header(title, opts.quick, rounds, target_ms, "median per call")
    started = time.perf_counter()
    results = anyio.run(bench, rounds, target_ms)
    print(render(results))
    print(f"\n(measured in {time.perf_counter() - started:.1f} s)")
    if opts.json:
        with open(opts.json, "w", encoding="utf-8") as f:
            json.dump({"machine": info, "rounds": rounds, "target_ms": target_ms, **results}, f)
    return 0


# -- the plot -----------------------------------------------------------------------------

# (label, case key prefix, depth of the case with no layers or None, reference?)
SERIES: tuple[tuple[str, str, str | None, bool], ...] = (
    ("allocation-free onion (reference)", "free", "free0", True),
    ("closure onion", "onion", "onion0", True),
    ("allocation-free onion, a guard per layer", "guard", "free0", True),
    ("hand-written sync pairs", "hsync", "floor", True),
    ("hand-written async pairs", "hasync", "floor", True),
    ("pluggy hookimpls", "pluggy", "floor", True),
    ("interpose sync tool.before", "sync", "empty", False),
    ("interpose middleware (block)", "mw", "empty", False),
    ("interpose middleware (raise)", "mwraise", "empty", False),
    ("interpose async tool.before (timeout 5s)", "async", "empty", False),
    ("interpose async tool.before (no timeout)", "asyncnt", "empty", False),
    ("interpose sync pairs (before + after)", "spair", "empty", False),
    ("interpose async pairs, not suspending (5s)", "apair", "empty", False),
)


def plot(cases: Sequence[Case], path: str) -> None:
    """Draw ns per call against the number of layers (handlers, pairs) of every
    mechanism and reference into ``path`` (PNG, or what its suffix names).

    Raises:
        SystemExit: matplotlib is not installed (the message says how to get it).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit(
            "interpose bench --plot needs matplotlib: pip install 'interpose[plot]' "
            "(or pip install matplotlib)"
        ) from None
    t = {c.key: c.median for c in cases}
    fig, ax = plt.subplots(figsize=(10, 6.5))
    for label, prefix, zero, reference in SERIES:
        depths = sorted(
            int(k[len(prefix) :]) for k in t if k.startswith(prefix) and k[len(prefix) :].isdigit()
        )
        xs = ([0] if zero is not None and 0 not in depths else []) + depths
        ys = ([t[zero]] if zero is not None and 0 not in depths else []) + [
            t[f"{prefix}{d}"] for d in depths
        ]
        ax.plot(xs, ys, "--" if reference else "-", marker="o", label=label)
    ax.axhline(t["floor"], color="grey", linewidth=0.8, label="floor: await tool(args)")
    ax.set_xlabel("layers per tool call (interceptors, middleware layers, pairs, hookimpls)")
    ax.set_ylabel("ns per tool call (median)")
    ax.set_title(
        f"interpose bench, Python {platform.python_version()}: the slope is the cost per layer"
    )
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run every case, print the table (and write JSON if asked).

    Raises:
        RuntimeError: a benchmarked pipeline does not behave as expected.
        OSError: the JSON file cannot be written.
    """
    parser = option_parser(__doc__)
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="time the loops by wall time (default) or by the process's CPU time",
    )
    parser.add_argument(
        "--plot", metavar="PATH", default=None, help="draw ns per call against layers (matplotlib)"
    )
    opts = parser.parse_args(argv)
    if opts.plot:
        try:
            import matplotlib  # noqa: F401  (checked now, not after a minute of measuring)
        except ImportError:
            print(
                "interpose bench --plot needs matplotlib: pip install 'interpose[plot]' "
                "(or pip install matplotlib)",
                file=sys.stderr,
            )
            return 2
    global clock
    clock = time.process_time_ns if opts.clock == "cpu" else time.perf_counter_ns
    rounds, target_ms = run_settings(opts, 61, 20.0)
    info = print_header(
        "interpose bench: per-tool-call overhead",
        opts.quick,
        rounds,
        target_ms,
        f"median ns per tool call ({opts.clock} clock)",
    )
    cases = build_cases()
    started = time.perf_counter()
    measure(cases, rounds, target_ms, group_of)
    rows = analyse(cases)
    print(render(rows))
    elapsed = time.perf_counter() - started
    print(f"\n(measured in {elapsed:.1f} s)")
    if opts.json:
        write_results(opts.json, info, rounds, target_ms, cases, rows)
    if opts.plot:
        plot(cases, opts.plot)
        print(f"plot: {opts.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
