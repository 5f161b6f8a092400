"""Per-tool-call overhead of interpose, against its floor, in one run.

The performance contract (DESIGN.md), printed first with its targets, each value the
median over rounds of the value computed in each round: every mechanism at most 1.2x
the hand-written program with the same semantics, and the cost of switching one on:

- empty pipeline: at most 1 us above the floor;
- the first sync before/after pair: at most 1 us above the empty pipeline;
- the first default (fail-closed) middleware layer: at most 1 us above the empty
  pipeline;
- a default (fail-closed) middleware layer: its slope per layer at most 1.2x that of a
  hand-written onion whose every layer is guarded by its own try/except;
- an ``on_error="raise"`` middleware layer: its slope at most 1.2x the plain onion's;
- a sync before/after pair: its slope per pair at most 1.2x that of a hand-written
  pair calling the same two functions around the tool;
- an async pair with the default timeout, not suspending: its slope per pair at most
  1.2x that of a hand-written async pair (``await fn(inp, out)`` around the tool).

What it measures (ns per tool call, every case driven the same way: an ``async def``
loop that awaits the thing ``n`` times, run with ``loop.run_until_complete`` on one
asyncio event loop, timed inside the coroutine with ``time.perf_counter_ns``, or the
process's CPU time with ``--clock cpu``; the cases are built in tool_call_cases.py, the
timing loop, rounds and table are harness.py's):

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
  function ``lambda ctx: mw(ctx, inner)`` built once (the reference); target: the
  ``on_error="raise"`` slope per layer at most 1.2x that onion's, the default layer's
  at most 1.2x the guarded onion's (below); ``(t_N - t_empty) / N`` against the
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
  suspending with the default timeout (its slope per pair against the sync pair's is
  informational: the contract compares it with the hand-written async pair), async not
  suspending without a timeout (the difference per pair is what the timeout costs
  handlers that do not wait; informational), and async handlers that suspend once
  (``await asyncio.sleep(0)``) with and without the default timeout (their difference
  per handler is what the timeout machinery costs a handler that waits; target: at most
  2 us); and the same pairs called by hand (``fn(inp, out)`` and ``await fn(inp, out)``
  around the tool), the references of the contract's pair rows; the hand-written async
  pair is the least an async pair can cost;
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
medians.  The empty pipeline is timed once more in the middleware group and once
more in the pairs group, so that each switch-on cost compares cases of one group.
Ratios compare numbers measured in the same run, so they hold on any machine.

Run it with ``interpose bench [--quick] [--plot out.png]`` or
``python benchmarks/bench_tool_call.py [--quick] [--json out.json] [--plot out.png]``;
``--plot`` draws ns per call against the number of layers of each mechanism and
reference (it needs matplotlib: ``pip install 'interpose[plot]'``).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence

# harness.py and tool_call_cases.py live next to this file: on the path when it is run
# as a script, not when ``interpose bench`` runs it with runpy from the installed wheel
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness
from harness import Case, Row
from tool_call_cases import DEPTHS, PAIR_KEYS, PAIRS, build_cases, group_of

# -- the rows -------------------------------------------------------------------------------


def per_layer(t: Mapping[str, float], key: str) -> float:
    """The slope from 1 to 10 layers (interceptors, middleware layers, pairs) of ``key``."""
    return (t[f"{key}10"] - t[f"{key}1"]) / 9


def depth_rows(
    t: Mapping[str, float],
    key: str,
    label: str,
    zero: str,
    measure: str,
    reference: Mapping[int, float] | None = None,
) -> list[Row]:
    """A row per depth N of ``key`` (its label ``label`` with N for ``{}``): the time per
    call, above the floor, and ``(t_N - t_zero) / N``, informational (against
    ``reference[N]`` if given); an ``(s)`` in the label is a plural for N > 1."""
    rows = []
    for d in DEPTHS:
        per = (t[f"{key}{d}"] - t[zero]) / d
        ratio = per / reference[d] if reference is not None else None
        name = label.format(d).replace("(s)", "s" if d > 1 else "")
        rows.append(Row(name, t[f"{key}{d}"], t[f"{key}{d}"] - t["floor"], measure, per, ratio))
        rows[-1].target = "info"
    return rows


def contract_rows(t: Mapping[str, float]) -> list[Row]:
    """The performance contract's rows (DESIGN.md), each with its target."""
    floor, empty = t["floor"], t["empty"]
    empty_over = empty - floor
    mw, guard = per_layer(t, "mw"), per_layer(t, "guard")
    mwraise, free = per_layer(t, "mwraise"), per_layer(t, "free")
    spair, hsync = per_layer(t, "spair"), per_layer(t, "hsync")
    apair, hasync = per_layer(t, "apair"), per_layer(t, "hasync")
    return [
        Row(
            "interpose, empty pipeline",
            empty,
            empty_over,
            "above floor",
            empty_over,
            None,
            "<= 1000 ns",
        ),
        Row(
            "  same, against issue 11's bound",
            None,
            None,
            "above floor",
            empty_over,
            None,
            "<= 500 ns",
        ),
        Row(
            "  switch-on: first sync pair",
            t["spair1"],
            t["spair1"] - floor,
            "above empty pipeline",
            t["spair1"] - t["emptyp"],
            None,
            "<= 1000 ns",
        ),
        Row(
            "  switch-on: first middleware layer",
            t["mw1"],
            t["mw1"] - floor,
            "above empty pipeline",
            t["mw1"] - t["emptym"],
            None,
            "<= 1000 ns",
        ),
        Row(
            "default (fail-closed) middleware layer",
            None,
            None,
            "slope vs guarded onion slope",
            mw,
            mw / guard,
            "<= 1.2x",
        ),
        Row(
            'on_error="raise" middleware layer',
            None,
            None,
            "slope vs allocation-free onion slope",
            mwraise,
            mwraise / free,
            "<= 1.2x",
        ),
        Row(
            "sync before/after pair",
            None,
            None,
            "per pair vs hand-written sync pair",
            spair,
            spair / hsync,
            "<= 1.2x",
        ),
        Row(
            "async pair (timeout 5s, not suspending)",
            None,
            None,
            "per pair vs hand-written async pair",
            apair,
            apair / hasync,
            "<= 1.2x",
        ),
    ]


def reference_rows(t: Mapping[str, float]) -> list[Row]:
    """The floor, the plain-call references and the call wrapper."""
    floor, empty = t["floor"], t["empty"]
    plain = t["call"] - t["loop"]
    wrapped = t["wrapper"] - floor
    return [
        Row("floor: await tool(args)", floor, 0.0),
        Row("empty loop iteration", t["loop"], None),
        Row("plain call h(inp, out), net of loop", plain, None, "reference (strict)", plain),
        Row(
            "handler loop: for fn in fns: fn(inp, out)",
            None,
            None,
            "per fn, slope 1->10 (reference)",
            per_layer(t, "fns"),
        ),
        Row(
            "hand-written call wrapper",
            t["wrapper"],
            wrapped,
            "above floor (what any such API costs)",
            wrapped,
        ),
        Row(
            "  empty pipeline vs the wrapper",
            None,
            None,
            "above floor, net of the wrapper",
            empty - floor - wrapped,
            (empty - floor) / wrapped,
            "info",
        ),
        Row(
            "interpose, 10 sync on another tool",
            t["other10"],
            t["other10"] - floor,
            "vs empty pipeline (matcher)",
            t["other10"] - empty,
            t["other10"] / empty,
            "info",
        ),
    ]


def interceptor_rows(t: Mapping[str, float]) -> list[Row]:
    """Sync interceptors against the handler loop, and against pluggy: the slope is the
    criterion; (t_N - t_empty) / N and the fixed cost show what the first registration
    switches on."""
    floor, empty = t["floor"], t["empty"]
    plain = t["call"] - t["loop"]
    per_fn = per_layer(t, "fns")  # the target's reference: one iteration + call
    rows: list[Row] = []
    rows = depth_rows(
        t,
        "sync",
        "interpose, {} sync interceptor(s)",
        "empty",
        "(t_N - t_empty)/N vs loop per fn",
        dict.fromkeys(DEPTHS, per_fn),
    )
    slope = per_layer(t, "sync")
    rows += [
        Row(
            "  slope 1->10 per interceptor",
            None,
            None,
            "vs handler loop per fn",
            slope,
            slope / per_fn,
            "<= 1.5x",
        ),
        Row("  same slope", None, None, "vs plain call net of loop", slope, slope / plain, "info"),
        Row(
            "  fixed cost of a sync chain",
            None,
            None,
            "t_1 - t_empty - slope",
            t["sync1"] - empty - slope,
            None,
            "info",
        ),
    ]
    for d in DEPTHS:
        rows.append(
            Row(
                f"pluggy, {d} hookimpls",
                t[f"pluggy{d}"],
                t[f"pluggy{d}"] - floor,
                f"interpose {d} / pluggy {d}, whole call",
                t[f"sync{d}"],
                t[f"sync{d}"] / t[f"pluggy{d}"],
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
    return rows


def onion_rows(t: Mapping[str, float]) -> list[Row]:
    """The hand-written onions: allocation-free (the reference), closure, guarded."""
    floor = t["floor"]
    free_per = {d: (t[f"free{d}"] - t["free0"]) / d for d in DEPTHS}
    free_slope = per_layer(t, "free")
    rows = [Row("allocation-free onion, 0 layers (core + ctx)", t["free0"], t["free0"] - floor)]
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
    rows += depth_rows(t, "onion", "closure onion, {} layers", "onion0", "(t_N - t_0)/N", free_per)
    onion_slope = per_layer(t, "onion")
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
    measure = "(t_N - t_0)/N vs onion /N"
    rows += depth_rows(t, "guard", "guarded onion, {} layers", "free0", measure, free_per)
    guard_slope = per_layer(t, "guard")
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
    return rows


def middleware_rows(t: Mapping[str, float]) -> list[Row]:
    """interpose's middleware layers, default and ``on_error="raise"``, against the
    onions (the contract's targets are in ``contract_rows``)."""
    empty = t["empty"]
    free_per = {d: (t[f"free{d}"] - t["free0"]) / d for d in DEPTHS}
    rows: list[Row] = []
    for key, label in (("mw", "block"), ("mwraise", "raise")):
        name = f"interpose, {{}} middleware ({label})"
        rows += depth_rows(t, key, name, "empty", "(t_N - t_empty)/N vs onion /N", free_per)
        slope = per_layer(t, key)
        for reference, name in (
            ("free", "allocation-free onion"),
            ("guard", "guarded onion"),
            ("onion", "closure onion"),
        ):
            rows.append(
                Row(
                    f"  slope 1->10 per layer ({label})",
                    None,
                    None,
                    f"vs {name} slope",
                    slope,
                    slope / per_layer(t, reference),
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
    return rows


def async_rows(t: Mapping[str, float]) -> list[Row]:
    """Async interceptors with and without the default timeout; informational."""
    rows: list[Row] = []
    for key, label in (("async", "timeout 5s"), ("asyncnt", "no timeout")):
        rows += depth_rows(t, key, f"interpose, {{}} async ({label})", "empty", "(t_N - t_empty)/N")
        slope = per_layer(t, key)
        rows.append(
            Row(
                f"  slope 1->10 async ({label})",
                None,
                None,
                "per interceptor vs loop per fn",
                slope,
                slope / per_layer(t, "fns"),
                "info",
            )
        )
    rows.append(
        Row(
            "  timeout per async handler, not suspending",
            None,
            None,
            "timeout 5s - none",
            (t["async10"] - t["asyncnt10"]) / 10,
            None,
            "info",
        )
    )
    return rows


def pair_rows(t: Mapping[str, float], cases: Sequence[Case]) -> list[Row]:
    """Pairs of tool.before + tool.after handlers: the slope per pair."""
    floor = t["floor"]
    labels = {c.key: c.label for c in cases}
    pair = {k: per_layer(t, k) for k in (*PAIR_KEYS, "hsync", "hasync")}
    rows: list[Row] = []
    for key in PAIR_KEYS:
        rows += [Row(labels[f"{key}{d}"], t[f"{key}{d}"], t[f"{key}{d}"] - floor) for d in PAIRS]
        rows.append(
            Row(
                f"  per pair ({PAIR_KEYS[key]})",
                None,
                None,
                "vs sync pair",
                pair[key],
                pair[key] / pair["spair"],
                "info",
            )
        )
    for key in ("hsync", "hasync"):
        rows += [Row(labels[f"{key}{d}"], t[f"{key}{d}"], t[f"{key}{d}"] - floor) for d in PAIRS]
        kind = "sync" if key == "hsync" else "async"
        rows.append(
            Row(
                f"  per pair (hand-written {kind})",
                None,
                None,
                "vs interpose sync pair",
                pair[key],
                pair[key] / pair["spair"],
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
    rows.append(
        Row(
            "  timeout per suspending handler",
            None,
            None,
            "(susp. 5s - none) / 2, per pair",
            (pair["suspair"] - pair["suspairnt"]) / 2,
            None,
            "<= 2000 ns",
        )
    )
    return rows


def traced_and_observed_rows(t: Mapping[str, float], cases: Sequence[Case]) -> list[Row]:
    """A traced layer (one interceptor span) against a bare SDK span; observers and
    registry changes against one sync interceptor with neither."""
    floor = t["floor"]
    labels = {c.key: c.label for c in cases}
    traced = per_layer(t, "traced")
    rows = [Row("bare SDK span, 5 attributes", t["barespan"], None, "reference", t["barespan"])]
    rows += [Row(labels[f"traced{d}"], t[f"traced{d}"], t[f"traced{d}"] - floor) for d in PAIRS]
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
    for key in ("subend", "suball", "turnend"):
        rows.append(
            Row(
                labels[key],
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


def rows_of(t: Mapping[str, float], cases: Sequence[Case]) -> list[Row]:
    """The table rows of one set of times per case (medians, or one round's samples):
    the contract first, then every mechanism against its references.

    Raises:
        KeyError: a case the table needs was not measured.
    """
    return [
        *contract_rows(t),
        *reference_rows(t),
        *interceptor_rows(t),
        *onion_rows(t),
        *middleware_rows(t),
        *async_rows(t),
        *pair_rows(t, cases),
        *traced_and_observed_rows(t, cases),
    ]


def analyse(cases: list[Case]) -> list[Row]:
    """The table rows, with targets checked: each derived value is the median over
    rounds of its value in each round (``harness.analyse``).

    Raises:
        KeyError: a case the table needs was not measured.
    """
    return harness.analyse(cases, rows_of)


# -- the plot -----------------------------------------------------------------------------

SERIES: harness.Series = (
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


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run every case, print the table (and write JSON if asked).

    Raises:
        RuntimeError: a benchmarked pipeline does not behave as expected.
        OSError: the JSON file cannot be written.
    """
    parser = harness.option_parser(__doc__, clock=True)
    parser.add_argument(
        "--plot", metavar="PATH", default=None, help="draw ns per call against layers (matplotlib)"
    )
    opts = parser.parse_args(argv)
    if opts.plot and not harness.plot_available():
        print(f"interpose bench --plot {harness.PLOT_HINT}", file=sys.stderr)
        return 2
    harness.use_clock(opts.clock)
    rounds, target_ms = harness.run_settings(opts, 61, 20.0)
    info = harness.print_header(
        "interpose bench: per-tool-call overhead",
        opts.quick,
        rounds,
        target_ms,
        f"median ns per tool call ({opts.clock} clock)",
    )
    cases = build_cases()
    started = time.perf_counter()
    harness.measure(cases, rounds, target_ms, group_of)
    rows = analyse(cases)
    print(harness.render(rows))
    print(f"\n(measured in {time.perf_counter() - started:.1f} s)")
    if opts.json:
        harness.write_results(opts.json, info, rounds, target_ms, cases, rows)
    if opts.plot:
        harness.plot(cases, SERIES, opts.plot, "interpose bench")
        print(f"plot: {opts.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
