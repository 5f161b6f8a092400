"""Per-tool-call cost of interpose's OpenTelemetry tracing, against bare SDK spans, in one run.

What it measures (ns per tool call; every case is an ``async def`` loop awaiting the thing
``n`` times on one asyncio event loop, timed with ``time.perf_counter_ns``, exactly as in
``bench_tool_call.py``, with the shared ``harness.py``):

- floor: ``await tool(args)``, where ``async def tool(args): return args``;
- references, on the same SDK tracer provider as the traced pipelines:

  - one bare SDK span, ``with tracer.start_as_current_span("execute_tool exec",
    kind=INTERNAL, attributes={**TOOL_BASE, "gen_ai.tool.call.id": call_id}): ...``, with
    exactly the attributes interpose records on an ok tool call's span (five, all passed
    when the span starts, as a skilled user would; the call id differs per call, so the
    dict is built per call, the other four are a constant): what instrumenting the call
    by hand costs; the reference of the tool-level targets;
  - the same span with no attributes (informational);
  - a bare span tree of the shape interpose records with ``tracing="interceptor"``: the
    tool span with one child per interceptor (four attributes each at the start, the
    decision at the end); and the same with one middleware layer span between them (the
    interceptors' spans nest in the layer's, as interpose's do); the references of the
    every-interceptor targets;
  - the bare span on a provider whose batch processor is tuned never to export inside
    the timed loop (informational: the span without the export worker's share);
  - the API's no-op ``start_as_current_span`` (no SDK provider installed; informational:
    what a library that does not check for a provider pays on every call);

- interpose, ``Pipeline(builtins=False)`` with N = 3 sync ``tool.before`` interceptors
  ``def h(inp, out): pass`` on ``exec``, called with ``await pipe.call_tool("exec", args,
  call=tool)`` (no subscribers, so no turn and no turn span): ``tracing="off"`` with the
  provider passed; ``tracing="tool"`` with no provider at all (the default configuration);
  ``tracing="tool"`` and ``tracing="interceptor"`` with the provider; and ``off``, ``tool``
  and ``interceptor`` again with one ``tool``-stage middleware layer
  ``async def mw(ctx, call_next): await call_next()`` around the interceptors.

Targets: ``tool`` without a provider costs the same as ``off`` (the difference within
50 ns: no OpenTelemetry call is made); ``(t_tool - t_off)`` is at most 1.2x one bare span,
with and without the middleware layer; ``(t_interceptor - t_off)`` is at most 1.2x the bare
tree of the same shape (1 + N spans, or 1 + 1 + N with the layer); and per traced layer
(interceptor or middleware), ``(t_interceptor - t_tool) / layers`` is at most 1.2x
``(t_tree - t_bare) / layers``, what one child span costs by hand.  ``(t_interceptor -
t_off)`` against (1 + N) separate bare spans, and the no-op and tuned-batch spans, are
informational.

Before timing, every pipeline and reference runs once and its spans are checked: the
traced cases record the expected span names and tree, with the same attribute keys as
their bare reference; the ``off`` and no-provider cases record nothing and run no code of
the ``opentelemetry`` packages at all (checked with ``sys.setprofile``).

The provider of the timed cases is an SDK ``TracerProvider`` with a ``BatchSpanProcessor``
as users configure it, ``BatchSpanProcessor(exporter)`` with the SDK's defaults (queue
2048, batches of 512, every 5 s), around an exporter that discards every batch (nothing
leaves the process, so the export itself costs next to nothing): ending a span appends it
to the queue, and the worker thread wakes every 512 spans to hand a batch to the exporter,
inside the timed loop, for the references and interpose alike.  Each case's loop flushes
the queue synchronously before it starts and after it stops the clock, so every loop
starts with an empty queue.  (The informational tuned-batch case has a queue and batch
size of 2**20 spans and a schedule delay of a day, so its worker never wakes inside a
timed loop.)

Methodology (the house harness): every case is calibrated to a loop count ``n`` whose run
lasts about ``--target-ms``, warmed up, then each round runs every case once in a shuffled
order with the garbage collector disabled during the timed loop; a case's ns/call is the
median over rounds.  A difference or ratio between cases (the ``value ns`` and ``ratio``
columns) is the median of the differences or ratios computed within each round, so a burst
of load on a shared machine that slows a whole round cancels out instead of landing on one
side of a subtraction.  Everything compared is measured in the same run.

Run it with ``python benchmarks/bench_tracing.py [--quick] [--rounds N] [--target-ms MS]
[--json out.json]`` (``--json`` also writes every round's sample): the full run (61 rounds
of ~20 ms per case) takes under a minute on a 2-core machine, ``--quick`` (5 rounds of
~2 ms) a few seconds.  It needs the ``dev`` extra (opentelemetry-sdk, pluggy), and no global
tracer provider may be installed in the process.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

from harness import (
    Case,
    Loop,
    Row,
    floor_case,
    measure,
    option_parser,
    print_header,
    render,
    run_settings,
    tool,
    verdict,
    write_results,
)
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind, Tracer
from tool_call_cases import ARGS, TOOL, mw

from interpose import Pipeline
from interpose.pipeline.tracing import TracingLevel

N = 3
"""Interceptors on ``exec`` in every pipeline."""

_QUEUE = 1 << 20
_DAY_MS = 86_400_000.0

TOOL_SPAN = f"execute_tool {TOOL}"
TOOL_BASE: dict[str, Any] = {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": TOOL,
    "gen_ai.tool.type": "function",
    "gen_ai.agent.id": "main",
}
CALL_ID = "call-1"
TOOL_ATTRS: dict[str, Any] = {**TOOL_BASE, "gen_ai.tool.call.id": CALL_ID}
"""What interpose sets on the span of an ok ``pipe.call_tool`` (nothing is added when
it ends: ``interpose.tool.status`` is set only for other outcomes).  The references
build it per call from ``TOOL_BASE`` and the call id, which differs per call."""

LAYER_ID = "m0"
LAYER_SPAN = f"tool {LAYER_ID}"
STEP_IDS = tuple(f"i{k}" for k in range(N))


def _step_attrs(hook: str, step_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "interpose.hook": hook,
        "interpose.interceptor.id": step_id,
        "interpose.priority": 0,
        "interpose.on_error": "block",
        **extra,
    }


STEPS: tuple[tuple[str, dict[str, Any]], ...] = tuple(
    (f"tool.before {i}", _step_attrs("tool.before", i)) for i in STEP_IDS
)
LAYER_ATTRS = _step_attrs("tool", LAYER_ID, **{"interpose.middleware": True})


# -- the provider -----------------------------------------------------------------------


class DiscardExporter(SpanExporter):
    """Drops every batch; keeps them in ``kept`` while that is a list (the check pass)."""

    def __init__(self) -> None:
        self.kept: list[ReadableSpan] | None = None

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self.kept is not None:
            self.kept.extend(spans)
        return SpanExportResult.SUCCESS


class Provider:
    """An SDK tracer provider with a batch processor, as users configure it (``tuned``:
    one that only exports when flushed)."""

    def __init__(self, *, tuned: bool = False) -> None:
        self.exporter = DiscardExporter()
        if not tuned:  # queue 2048, batches of 512, every 5 s: the worker exports meanwhile
            self.processor = BatchSpanProcessor(self.exporter)
        else:
            self.processor = BatchSpanProcessor(
                self.exporter,
                max_queue_size=_QUEUE,
                max_export_batch_size=_QUEUE,
                schedule_delay_millis=_DAY_MS,
            )
        self.sdk = TracerProvider()
        self.sdk.add_span_processor(self.processor)
        self.tracer = self.sdk.get_tracer("bench")

    def flush(self) -> None:
        """Export (drop) every queued span, in this thread."""
        self.processor.force_flush()

    def record(self, run: Callable[[], None]) -> list[ReadableSpan]:
        """The spans ``run()`` ends, in the order they ended.

        Raises:
            Exception: whatever ``run`` raises (the exporter stops keeping spans).
        """
        self.flush()
        kept: list[ReadableSpan] = []
        self.exporter.kept = kept
        try:
            run()
            self.flush()
        finally:
            self.exporter.kept = None
        return kept

    def shutdown(self) -> None:
        self.sdk.shutdown()


# -- the cases ----------------------------------------------------------------------------


def bare_span_case(tracer: Tracer, flush: Callable[[], None], attrs: bool = True) -> Loop:
    """One span per iteration, with interpose's tool-span attributes or none."""

    async def loop(n: int) -> int:
        start_span = tracer.start_as_current_span
        internal = SpanKind.INTERNAL
        flush()
        if attrs:
            base, call_id = TOOL_BASE, CALL_ID
            start = time.perf_counter_ns()
            for _ in range(n):
                with start_span(
                    TOOL_SPAN, kind=internal, attributes={**base, "gen_ai.tool.call.id": call_id}
                ):
                    pass
        else:
            start = time.perf_counter_ns()
            for _ in range(n):
                with start_span(TOOL_SPAN, kind=internal):
                    pass
        elapsed = time.perf_counter_ns() - start
        flush()
        return elapsed

    return loop


def bare_tree_case(tracer: Tracer, flush: Callable[[], None], layer: bool) -> Loop:
    """The span tree interpose records with ``tracing="interceptor"``, written by hand:
    the tool span, (the layer's span,) a child span per interceptor."""

    async def loop(n: int) -> int:
        start_span = tracer.start_as_current_span
        internal = SpanKind.INTERNAL
        base, call_id, la, steps = TOOL_BASE, CALL_ID, LAYER_ATTRS, STEPS
        flush()
        start = time.perf_counter_ns()
        for _ in range(n):
            with start_span(
                TOOL_SPAN, kind=internal, attributes={**base, "gen_ai.tool.call.id": call_id}
            ):
                if layer:
                    with start_span(LAYER_SPAN, attributes=la) as outer:
                        for name, sa in steps:
                            with start_span(name, attributes=sa) as s:
                                s.set_attribute("interpose.decision", "continue")
                        outer.set_attribute("interpose.decision", "continue")
                else:
                    for name, sa in steps:
                        with start_span(name, attributes=sa) as s:
                            s.set_attribute("interpose.decision", "continue")
        elapsed = time.perf_counter_ns() - start
        flush()
        return elapsed

    return loop


def noop_span_case() -> Loop:
    """The API's ``start_as_current_span`` with no SDK provider installed."""
    tracer = trace.get_tracer("bench")

    async def loop(n: int) -> int:
        start_span = tracer.start_as_current_span
        internal = SpanKind.INTERNAL
        a = TOOL_ATTRS
        start = time.perf_counter_ns()
        for _ in range(n):
            with start_span(TOOL_SPAN, kind=internal, attributes=a):
                pass
        return time.perf_counter_ns() - start

    return loop


def handler(inp: object, out: object) -> None:
    """A sync interceptor that does nothing."""


def make_pipeline(level: TracingLevel, provider: Provider | None, layer: bool) -> Pipeline:
    pipe = Pipeline(
        builtins=False,
        tracing=level,
        tracer_provider=provider.sdk if provider is not None else None,
    )
    for i in STEP_IDS:
        pipe.intercept("tool.before", id=i, tools=TOOL)(handler)
    if layer:
        pipe.middleware("tool", id=LAYER_ID)(mw)
    return pipe


def pipeline_case(pipe: Pipeline, flush: Callable[[], None]) -> Loop:
    async def loop(n: int) -> int:
        call_tool = pipe.call_tool
        t = tool
        args = ARGS
        flush()
        start = time.perf_counter_ns()
        for _ in range(n):
            await call_tool(TOOL, args, call=t)
        elapsed = time.perf_counter_ns() - start
        flush()
        return elapsed

    return loop


# -- checking before timing ------------------------------------------------------------------


Shape = list[tuple[str, str | None, frozenset[str]]]
"""Per span, in the order they ended: name, parent's name, attribute keys."""


def shape(spans: list[ReadableSpan]) -> Shape:
    names = {s.context.span_id: s.name for s in spans if s.context is not None}
    return [
        (
            s.name,
            names.get(s.parent.span_id) if s.parent is not None else None,
            frozenset(s.attributes or {}),
        )
        for s in spans
    ]


def _otel_frames(run: Callable[[], None]) -> list[str]:
    """The functions of the ``opentelemetry`` packages that ``run()`` calls (in this
    thread), Python or C."""
    marker = f"{os.sep}opentelemetry{os.sep}"
    seen: list[str] = []

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and marker in frame.f_code.co_filename:
            seen.append(f"{frame.f_code.co_filename}:{frame.f_code.co_name}")
        elif event == "c_call" and "opentelemetry" in str(getattr(arg, "__module__", "")):
            seen.append(repr(arg))

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return seen


def _run_loop(loop: Loop) -> Callable[[], None]:
    def run() -> None:
        asyncio.run(loop(1))

    return run


def _call(pipe: Pipeline) -> Callable[[], None]:
    """One ``pipe.call_tool``, checked to return the tool's output unchanged."""

    def run() -> None:
        async def once() -> None:
            result = await pipe.call_tool(TOOL, ARGS, call=tool)
            if result.status != "ok" or result.output is not ARGS:
                raise RuntimeError(f"{pipe!r} returned {result!r}")

        asyncio.run(once())

    return run


def check(provider: Provider, pipes: dict[str, Pipeline], refs: dict[str, Loop]) -> None:
    """Run every pipeline and reference once and check the spans they record.

    Raises:
        RuntimeError: a pipeline does not return the tool's output, records other spans
            than expected (names, tree, attribute keys of its bare reference), or an
            untraced pipeline runs OpenTelemetry code.
    """
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        raise RuntimeError("a global tracer provider is installed; this benchmark needs none")
    for key in ("off", "noprov", "off_mw"):
        frames = _otel_frames(_call(pipes[key]))
        if frames:
            raise RuntimeError(f"{key}: tracing is off but OpenTelemetry ran: {frames[:5]}")
        spans = provider.record(_call(pipes[key]))
        if spans:
            raise RuntimeError(f"{key}: tracing is off but recorded {shape(spans)}")
    steps = [(name, TOOL_SPAN) for name, _ in STEPS]
    layered = [(name, LAYER_SPAN) for name, _ in STEPS] + [(LAYER_SPAN, TOOL_SPAN)]
    expected: dict[str, tuple[str, list[tuple[str, str | None]]]] = {
        "tool": ("bare", [(TOOL_SPAN, None)]),
        "tool_mw": ("bare", [(TOOL_SPAN, None)]),
        "icpt": ("tree", [*steps, (TOOL_SPAN, None)]),
        "icpt_mw": ("tree_mw", [*layered, (TOOL_SPAN, None)]),
    }
    for key, (ref, tree) in expected.items():
        got = shape(provider.record(_call(pipes[key])))
        want = shape(provider.record(_run_loop(refs[ref])))
        if [(name, parent) for name, parent, _ in got] != tree:
            raise RuntimeError(f"{key}: recorded {got}, expected the tree {tree}")
        if got != want:
            raise RuntimeError(f"{key}: recorded {got}, but its reference {ref} records {want}")


# -- reporting ----------------------------------------------------------------------------


def paired(a: Case, b: Case, ref: Case | None = None, scale: int = 1) -> tuple[float, float]:
    """The median over rounds of ``a - b``, and of ``(a - b) / (scale * ref)``, each
    computed within one round (a burst of load that slows a whole round cancels out).

    Raises:
        statistics.StatisticsError: no rounds were measured.
    """
    diffs = [x - y for x, y in zip(a.samples, b.samples, strict=True)]
    if ref is None:
        return statistics.median(diffs), float("nan")
    ratios = [d / (scale * r) for d, r in zip(diffs, ref.samples, strict=True)]
    return statistics.median(diffs), statistics.median(ratios)


def analyse(cases: list[Case]) -> list[Row]:
    """Turn the rounds into the table rows, with targets checked.

    ns/call is a case's median; a difference or ratio is the median of the per-round
    differences or ratios (``paired``).

    Raises:
        KeyError: a case the table needs was not measured.
    """
    c = {case.key: case for case in cases}
    t = {case.key: case.median for case in cases}
    floor = t["floor"]
    rows = [Row("floor: await tool(args)", floor, 0.0)]
    for key, measure_ in (
        ("noop", "API no-op span (info)"),
        ("bare0", "SDK span, no attributes (info)"),
        ("bare", "reference: 1 span"),
        ("tree", f"reference: 1 + {N} spans"),
        ("tree_mw", f"reference: 1 + 1 + {N} spans"),
    ):
        rows.append(Row(c[key].label, t[key], None, measure_, t[key]))
    diff, ratio = paired(c["bare_tuned"], c["bare"], c["bare"])
    rows.append(
        Row(c["bare_tuned"].label, t["bare_tuned"], None, "- bare span", diff, 1 + ratio, "info")
    )
    for suffix, what in (("", ""), ("_mw", " + 1 mw")):
        off = c[f"off{suffix}"]
        rows.append(Row(f"off{what}, provider passed", off.median, off.median - floor))
        if not suffix:
            diff, ratio = paired(c["noprov"], off, off)
            rows.append(
                Row(
                    "tool, no provider (default config)",
                    t["noprov"],
                    t["noprov"] - floor,
                    "- off",
                    diff,
                    1 + ratio,
                    "<= 50 ns",
                    verdict(diff <= 50),
                )
            )
        tool_case = c[f"tool{suffix}"]
        diff, ratio = paired(tool_case, off, c["bare"])
        rows.append(
            Row(
                f"tool{what}, provider",
                tool_case.median,
                tool_case.median - floor,
                "- off, vs 1 bare span",
                diff,
                ratio,
                "<= 1.2x",
                verdict(ratio <= 1.2),
            )
        )
        icpt = c[f"icpt{suffix}"]
        spans = 1 + N + (1 if suffix else 0)
        diff, ratio = paired(icpt, off, c[f"tree{suffix}"])
        rows.append(
            Row(
                f"interceptor{what}, provider",
                icpt.median,
                icpt.median - floor,
                f"- off, vs bare tree ({spans} spans)",
                diff,
                ratio,
                "<= 1.2x",
                verdict(ratio <= 1.2),
            )
        )
        _, ratio = paired(icpt, off, c["bare"], spans)
        rows.append(
            Row("  same", None, None, f"- off, vs {spans} x 1 bare span", diff, ratio, "info")
        )
        rows.append(Row("  same, per span", None, None, f"(- off) / {spans}", diff / spans))
        layers = spans - 1
        diffs = [(i - o) / layers for i, o in zip(icpt.samples, tool_case.samples, strict=True)]
        ratios = [
            d / ((tr - b) / layers)
            for d, tr, b in zip(diffs, c[f"tree{suffix}"].samples, c["bare"].samples, strict=True)
        ]
        rows.append(
            Row(
                f"  per traced layer{what}",
                None,
                None,
                f"(- tool) / {layers}, vs a bare child span",
                statistics.median(diffs),
                statistics.median(ratios),
                "<= 1.2x",
                verdict(statistics.median(ratios) <= 1.2),
            )
        )
    return rows


# -- running ------------------------------------------------------------------------------


def build(provider: Provider, tuned_provider: Provider) -> list[Case]:
    """Every case of the run, checked, in table order.

    Raises:
        RuntimeError: a pipeline or reference does not behave as expected (see ``check``).
    """
    flush = provider.flush
    pipes = {
        "off": make_pipeline("off", provider, False),
        "noprov": make_pipeline("tool", None, False),
        "tool": make_pipeline("tool", provider, False),
        "icpt": make_pipeline("interceptor", provider, False),
        "off_mw": make_pipeline("off", provider, True),
        "tool_mw": make_pipeline("tool", provider, True),
        "icpt_mw": make_pipeline("interceptor", provider, True),
    }
    refs = {
        "bare": bare_span_case(provider.tracer, flush),
        "tree": bare_tree_case(provider.tracer, flush, layer=False),
        "tree_mw": bare_tree_case(provider.tracer, flush, layer=True),
    }
    check(provider, pipes, refs)
    cases = [
        Case("floor", "floor: await tool(args)", floor_case(ARGS)),
        Case("noop", "API no-op span, no SDK installed", noop_span_case()),
        Case(
            "bare0", "bare SDK span, no attributes", bare_span_case(provider.tracer, flush, False)
        ),
        Case("bare", "bare SDK span, interpose's attributes", refs["bare"]),
        Case(
            "bare_tuned",
            "bare SDK span, batch never exporting in the loop",
            bare_span_case(tuned_provider.tracer, tuned_provider.flush),
        ),
        Case("tree", f"bare tree: tool span + {N} children", refs["tree"]),
        Case("tree_mw", f"bare tree: tool + layer + {N} children", refs["tree_mw"]),
    ]
    labels = {
        "off": "off",
        "noprov": "tool, no provider",
        "tool": "tool",
        "icpt": "interceptor",
        "off_mw": "off, 1 mw",
        "tool_mw": "tool, 1 mw",
        "icpt_mw": "interceptor, 1 mw",
    }
    cases += [Case(k, f"interpose {labels[k]}", pipeline_case(p, flush)) for k, p in pipes.items()]
    return cases


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, check and run every case, print the table (and write JSON if asked).

    Raises:
        RuntimeError: a benchmarked pipeline or reference does not behave as expected.
        OSError: the JSON file cannot be written.
    """
    opts = option_parser(__doc__).parse_args(argv)
    rounds, target_ms = run_settings(opts, 61, 20.0)
    info = print_header(
        "interpose bench: tracing cost per tool call",
        opts.quick,
        rounds,
        target_ms,
        f"median ns per tool call; N = {N}",
    )
    provider, tuned_provider = Provider(), Provider(tuned=True)
    try:
        cases = build(provider, tuned_provider)
        started = time.perf_counter()
        measure(cases, rounds, target_ms)
        rows = analyse(cases)
    finally:
        provider.shutdown()
        tuned_provider.shutdown()
    print(render(rows))
    print(f"\n(measured in {time.perf_counter() - started:.1f} s)")
    if opts.json:
        write_results(opts.json, info, rounds, target_ms, cases, rows, samples=True, interceptors=N)
    return 0


if __name__ == "__main__":
    sys.exit(main())
