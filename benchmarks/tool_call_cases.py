"""The cases of bench_tool_call.py: the operations it times (interpose's, pluggy's and
the hand-written programs with the same semantics), each built into a timed loop, and
the groups of cases that run one after the other in each round.  What each case
measures, and against what, is said in bench_tool_call.py's docstring."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

import harness
import pluggy
from harness import Args, Case, Loop, empty_loop_case, floor_case, tool
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from interpose import Pipeline, ToolResult

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


def plain_call_case() -> Loop:
    async def loop(n: int) -> int:
        h = sync_handler
        inp, out = _Payload(), _Payload()
        start = harness.clock()
        for _ in range(n):
            h(inp, out)
        return harness.clock() - start

    return loop


def handler_loop_case(depth: int) -> Loop:
    """The least any dispatcher pays: ``for fn in fns: fn(inp, out)`` over ``depth`` fns."""

    async def loop(n: int) -> int:
        fns = (sync_handler,) * depth
        inp, out = _Payload(), _Payload()
        start = harness.clock()
        for _ in range(n):
            for fn in fns:
                fn(inp, out)
        return harness.clock() - start

    return loop


def calls_case(call_tool: Callable[..., Awaitable[Any]]) -> Loop:
    """``await call_tool(TOOL, args, call=tool)``, ``n`` times."""

    async def loop(n: int) -> int:
        t = tool
        args = ARGS
        start = harness.clock()
        for _ in range(n):
            await call_tool(TOOL, args, call=t)
        return harness.clock() - start

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
        start = harness.clock()
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
        return harness.clock() - start

    return loop


def recompile_case(pipe: Pipeline) -> Loop:
    """Register and remove a handler for another tool, then call: every call recompiles."""

    async def loop(n: int) -> int:
        call_tool = pipe.call_tool
        registry = pipe.registry
        intercept = pipe.intercept("tool.before", id="churn", tools="read")
        t = tool
        args = ARGS
        start = harness.clock()
        for _ in range(n):
            intercept(sync_handler)
            registry.remove("churn")
            await call_tool(TOOL, args, call=t)
        return harness.clock() - start

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
        start = harness.clock()
        for _ in range(n):
            hook(inp=inp, out=out)
            await t(args)
        return harness.clock() - start

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
        start = harness.clock()
        for _ in range(n):
            await a(_Ctx(args))
        return harness.clock() - start

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
            start = harness.clock()
            for _ in range(n):
                for fn in before:
                    await fn(inp, out)
                await t(args)
                for fn in after:
                    await fn(inp, out)
            return harness.clock() - start

        return loop

    async def sync_loop(n: int) -> int:
        t = tool
        args = ARGS
        inp, out = _Payload(), _Payload()
        start = harness.clock()
        for _ in range(n):
            for fn in before:
                fn(inp, out)
            await t(args)
            for fn in after:
                fn(inp, out)
        return harness.clock() - start

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
        start = harness.clock()
        for _ in range(n):
            with start_span("tool.before i0", attributes=attrs):
                pass
        elapsed = harness.clock() - start
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
    frozenset({"free", "onion", "guard", "mw", "mwraise", "emptym"}),
    frozenset({"async", "asyncnt"}),
    frozenset({"spair", "apair", "apairnt", "suspair", "suspairnt", "hsync", "hasync", "emptyp"}),
    frozenset({"barespan", "traced"}),
)


def group_of(case: Case) -> int:
    """The index in ``GROUPS`` of the group of ``case`` (``len(GROUPS)`` for the rest)."""
    kind = case.key.rstrip("0123456789")
    return next((i for i, members in enumerate(GROUPS) if kind in members), len(GROUPS))


def build_cases() -> list[Case]:
    """Every case of the run, in table order.

    Raises:
        RuntimeError: a pipeline does not return the tool's output unchanged.
    """
    cases = [
        Case("floor", "floor: await tool(args)", floor_case(ARGS)),
        Case("loop", "empty loop iteration", empty_loop_case()),
        Case("call", "plain call h(inp, out) (with loop)", plain_call_case()),
        Case("fns1", "handler loop, 1 fn", handler_loop_case(1)),
        Case("fns10", "handler loop, 10 fns", handler_loop_case(10)),
    ]
    empty = Pipeline(builtins=False, tracing="off")
    pipes: list[Pipeline] = [empty]
    cases.append(Case("empty", "interpose, empty pipeline", pipeline_case(empty)))
    # the empty pipeline again in the middleware and pairs groups: the switch-on costs
    cases.append(
        Case("emptym", "interpose, empty pipeline (middleware group)", pipeline_case(empty))
    )
    cases.append(Case("emptyp", "interpose, empty pipeline (pairs group)", pipeline_case(empty)))
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
