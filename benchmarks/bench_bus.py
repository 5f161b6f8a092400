"""What publishing one event costs the publisher, with 0, 1 and 4 subscribers, in one run.

What it measures (ns per event; every case is an ``async def`` loop that does the thing
``n`` times, run with ``loop.run_until_complete`` on one asyncio event loop, timed inside
the coroutine with ``time.perf_counter_ns``):

- references measured in the same run: an empty loop iteration; a bare attribute check
  ``if holder.flag:`` (the least a "does anyone listen?" test can cost); a bare call
  ``observe(event)``; and ``for q in queues: q.append(event)`` over 1 and 4 deques, the
  floor of handing one event to N buffers;
- ``InMemoryBus.publish_nowait(event)`` (the sync core) and ``await bus.publish(event)``
  (what the pipeline awaits) of one pre-built ``ToolExecEnd``, with 0, 1 and 4
  subscriptions to its kind; target: at most 300 ns per event per subscriber, read two
  ways: the cost above publishing to nobody, ``(t_N - t_0) / N``, and the whole cost
  spread over the subscribers, ``t_N / N``;
- building the same ``ToolExecEnd`` directly, ``ToolExecEnd(ts=time_ns(), seq=..., ...)``
  (a reference for what the emit path spends building its event);
- the pipeline's emit path, written as the pipeline writes it:
  ``if "tool_exec_end" in bus.wanted: await pipe.emit(ToolExecEnd, ...)`` (which builds
  the event, stamps ``ts`` and ``seq``, and publishes it), with 0, 1 and 4 subscribers;
  target: with nobody subscribed it costs at most 50 ns more than the bare attribute
  check (no event is built); informational: what building the event costs (the same
  emit without the check, nobody subscribed) and the cost per subscriber on top.

Only publishing is timed.  Every subscription's buffer is larger than any run, so a
publish never waits and no consumer runs inside the timed loop (a publish that does not
wait never yields to the event loop).  Consumers deliver the backlog when the case leaves
``async with bus`` / ``async with pipe``, after the clock has stopped; the observers
count what they receive, and the run fails if any event went missing.

Methodology (harness.py's, as in bench_tool_call.py): each case is calibrated to a loop count ``n``
whose run lasts about ``--target-ms``, then warmed up; each round runs every case once, in
a shuffled order, with the garbage collector disabled; a case's ns/event is the median
over rounds.  Ratios compare numbers measured in the same run, so they hold on any
machine even though the nanoseconds do not.

Run it with ``python benchmarks/bench_bus.py [--quick] [--json out.json]``.
"""

from __future__ import annotations

import itertools
import sys
import time
from collections import deque
from dataclasses import dataclass, field

# the house harness: calibration, interleaved rounds, machine description
from harness import Case as HarnessCase
from harness import (
    Column,
    Loop,
    empty_loop_case,
    measure,
    option_parser,
    print_header,
    run_settings,
    table,
    verdict,
    write_results,
)

from interpose import Pipeline
from interpose.bus import InMemoryBus
from interpose.bus import events as ev

"""A timed case: ``await loop(n)`` does the operation n times, returns the ns it took."""

SUBSCRIBERS = (0, 1, 4)
KIND = "tool_exec_end"
# larger than any calibrated run: a publish never waits for a consumer
BUFFER = 1 << 30
TARGET_PER_SUBSCRIBER_NS = 300.0
TARGET_NOBODY_NS = 50.0

EVENT = ev.ToolExecEnd(
    ts=1,
    seq=1,
    turn_id="t-1",
    agent_id="coder",
    session_key="s1",
    tool_name="exec",
    tool_call_id="call-1",
    status="ok",
    duration_ns=1234,
    interceptors=("no-rm",),
)


class Delivery:
    """What a case published to its subscribers, and what its observers received.

    The observers run only when a case leaves ``async with``, outside the timed region.
    """

    def __init__(self) -> None:
        self.expected = 0
        self.received = 0

    def observer(self, event: object) -> None:
        self.received += 1


class Flag:
    __slots__ = ("flag",)

    def __init__(self) -> None:
        self.flag = False


def observe(event: object) -> None:
    """The callee of the bare-call reference."""


# -- the cases ------------------------------------------------------------------------------


@dataclass
class Case(HarnessCase):
    """A case of the harness, with the deliveries its observers must have received."""

    delivery: Delivery = field(default_factory=Delivery)


def attribute_check_case() -> Loop:
    async def loop(n: int) -> int:
        holder = Flag()
        start = time.perf_counter_ns()
        for _ in range(n):
            if holder.flag:
                pass
        return time.perf_counter_ns() - start

    return loop


def call_case() -> Loop:
    async def loop(n: int) -> int:
        fn = observe
        event = EVENT
        start = time.perf_counter_ns()
        for _ in range(n):
            fn(event)
        return time.perf_counter_ns() - start

    return loop


def build_case() -> Loop:
    """The event the emit cases publish, built directly at the call site."""

    async def loop(n: int) -> int:
        cls = ev.ToolExecEnd
        seq = itertools.count(1)
        time_ns = time.time_ns
        interceptors = ("no-rm",)
        start = time.perf_counter_ns()
        for _ in range(n):
            cls(
                ts=time_ns(),
                seq=next(seq),
                turn_id="t-1",
                agent_id="coder",
                session_key="s1",
                tool_name="exec",
                tool_call_id="call-1",
                status="ok",
                is_error=False,
                duration_ns=1234,
                decided_by="",
                reason="",
                interceptors=interceptors,
            )
        return time.perf_counter_ns() - start

    return loop


def append_case(queues: int) -> Loop:
    """``for q in queues: q.append(event)``; the deques are emptied after the clock stops."""

    async def loop(n: int) -> int:
        qs = tuple(deque[object]() for _ in range(queues))
        event = EVENT
        start = time.perf_counter_ns()
        for _ in range(n):
            for q in qs:
                q.append(event)
        elapsed = time.perf_counter_ns() - start
        for q in qs:
            q.clear()
        return elapsed

    return loop


def bus_case(delivery: Delivery, subscribers: int, *, nowait: bool) -> Loop:
    bus = InMemoryBus(observer_timeout=None)
    for _ in range(subscribers):
        bus.subscribe(delivery.observer, events={KIND}, buffer=BUFFER)

    async def loop(n: int) -> int:
        event = EVENT
        async with bus:
            if nowait:
                publish_nowait = bus.publish_nowait
                start = time.perf_counter_ns()
                for _ in range(n):
                    publish_nowait(event)
                elapsed = time.perf_counter_ns() - start
            else:
                publish = bus.publish
                start = time.perf_counter_ns()
                for _ in range(n):
                    await publish(event)
                elapsed = time.perf_counter_ns() - start
        delivery.expected += n * subscribers  # leaving `async with bus` delivered them
        return elapsed

    return loop


def emit_case(delivery: Delivery, subscribers: int, *, guarded: bool) -> Loop:
    """The pipeline's emit path with ``subscribers`` observers of tool_exec_end; with
    ``guarded``, checked first the way the pipeline checks (``kind in bus.wanted``)."""
    pipe = Pipeline(builtins=False, tracing="off", observer_timeout=None)
    for _ in range(subscribers):
        pipe.subscribe(delivery.observer, events={KIND}, buffer=BUFFER)

    async def loop(n: int) -> int:
        bus = pipe.bus
        emit = pipe.emit
        cls = ev.ToolExecEnd
        interceptors = ("no-rm",)
        async with pipe:
            start = time.perf_counter_ns()
            if guarded:
                for _ in range(n):
                    if KIND in bus.wanted:
                        await emit(
                            cls,
                            "t-1",
                            "coder",
                            "s1",
                            tool_name="exec",
                            tool_call_id="call-1",
                            status="ok",
                            is_error=False,
                            duration_ns=1234,
                            decided_by="",
                            reason="",
                            interceptors=interceptors,
                        )
            else:
                for _ in range(n):
                    await emit(
                        cls,
                        "t-1",
                        "coder",
                        "s1",
                        tool_name="exec",
                        tool_call_id="call-1",
                        status="ok",
                        is_error=False,
                        duration_ns=1234,
                        decided_by="",
                        reason="",
                        interceptors=interceptors,
                    )
            elapsed = time.perf_counter_ns() - start
        delivery.expected += n * subscribers
        return elapsed

    return loop


def build_cases() -> list[Case]:
    """Every case of the run, in table order."""
    cases = [
        Case("loop", "empty loop iteration", empty_loop_case()),
        Case("attr", "attribute check: if holder.flag", attribute_check_case()),
        Case("call", "bare call: observe(event)", call_case()),
        Case("append1", "deque append, 1 deque", append_case(1)),
        Case("append4", "deque append, 4 deques", append_case(4)),
        Case("build", "ToolExecEnd(...) built directly", build_case()),
    ]
    for key, name, nowait in (
        ("nowait", "bus.publish_nowait(event)", True),
        ("publish", "await bus.publish(event)", False),
    ):
        for s in SUBSCRIBERS:
            d = Delivery()
            cases.append(
                Case(f"{key}{s}", f"{name}, {s} subs", bus_case(d, s, nowait=nowait), delivery=d)
            )
    d = Delivery()
    cases.append(
        Case("emit0raw", "emit(...) unchecked, 0 subs", emit_case(d, 0, guarded=False), delivery=d)
    )
    for s in SUBSCRIBERS:
        d = Delivery()
        label = f"if kind in wanted: emit(...), {s} subs"
        cases.append(Case(f"emit{s}", label, emit_case(d, s, guarded=True), delivery=d))
    return cases


def check_delivery(cases: list[Case]) -> None:
    """Check that every event each case published reached every subscriber.

    Raises:
        RuntimeError: some case's observers did not receive every event it published.
    """
    for case in cases:
        d = case.delivery
        if d.received != d.expected:
            raise RuntimeError(f"{case.label}: observers received {d.received} of {d.expected}")


# -- timing ----------------------------------------------------------------------------------


# -- reporting -------------------------------------------------------------------------------


@dataclass
class Row:
    case: str
    ns_per_event: float | None
    per_subscriber: float | None = None
    measure: str = ""
    value: float | None = None
    ratio: float | None = None
    target: str = ""
    result: str = ""


def analyse(cases: list[Case]) -> list[Row]:
    """Turn the medians into table rows, with the targets checked.

    Raises:
        KeyError: a case the table needs was not measured.
    """
    t = {c.key: c.median for c in cases}
    attr = t["attr"]
    append_per = {1: t["append1"], 4: t["append4"] / 4}
    rows = [
        Row("empty loop iteration", t["loop"]),
        Row("attribute check: if holder.flag", attr, None, "reference", attr),
        Row("bare call: observe(event)", t["call"], None, "reference", t["call"]),
    ]
    for q in (1, 4):
        rows.append(
            Row(
                f"deque append, {q} deque{'s' if q > 1 else ''}",
                t[f"append{q}"],
                append_per[q],
                "per deque (floor)",
                append_per[q],
            )
        )
    for key, label in (("nowait", "bus.publish_nowait(event)"), ("publish", "await bus.publish")):
        t0 = t[f"{key}0"]
        rows.append(Row(f"{label}, 0 subscribers", t0, None, "publishing to nobody", t0))
        for s in SUBSCRIBERS[1:]:
            above = (t[f"{key}{s}"] - t0) / s
            whole = t[f"{key}{s}"] / s
            rows.append(
                Row(
                    f"{label}, {s} subscriber{'s' if s > 1 else ''}",
                    t[f"{key}{s}"],
                    whole,
                    "(t_N - t_0)/N vs deque append",
                    above,
                    above / append_per[s],
                    f"<= {TARGET_PER_SUBSCRIBER_NS:.0f} ns",
                    verdict(above <= TARGET_PER_SUBSCRIBER_NS),
                )
            )
            rows.append(
                Row(
                    "  the same, whole cost spread",
                    None,
                    None,
                    "t_N/N",
                    whole,
                    None,
                    f"<= {TARGET_PER_SUBSCRIBER_NS:.0f} ns",
                    verdict(whole <= TARGET_PER_SUBSCRIBER_NS),
                )
            )
        slope = (t[f"{key}4"] - t[f"{key}1"]) / 3
        rows.append(
            Row(
                "  slope 1->4 per subscriber",
                None,
                None,
                "vs deque append slope",
                slope,
                slope / ((t["append4"] - t["append1"]) / 3),
                "info",
            )
        )
    nobody = t["emit0"] - attr
    rows.append(
        Row(
            "if kind in wanted: emit(...), 0 subs",
            t["emit0"],
            None,
            "above the attribute check",
            nobody,
            t["emit0"] / attr,
            f"<= {TARGET_NOBODY_NS:.0f} ns",
            verdict(nobody <= TARGET_NOBODY_NS),
        )
    )
    rows.append(
        Row(
            "pipe.emit(...) unchecked, 0 subs",
            t["emit0raw"],
            None,
            "vs build directly + publish to 0",
            t["emit0raw"],
            t["emit0raw"] / (t["build"] + t["publish0"]),
            "info",
        )
    )
    rows.append(Row("  ToolExecEnd(...) built directly", t["build"], None, "reference", t["build"]))
    for s in SUBSCRIBERS[1:]:
        above = (t[f"emit{s}"] - t["emit0raw"]) / s
        rows.append(
            Row(
                f"if kind in wanted: emit(...), {s} sub{'s' if s > 1 else ''}",
                t[f"emit{s}"],
                t[f"emit{s}"] / s,
                "per sub above unchecked, 0 subs",
                above,
                above / append_per[s],
                "info",
            )
        )
    return rows


COLUMNS = (
    Column("case", 40, "case"),
    Column("ns/event", 9, "ns_per_event", "9.1f"),
    Column("ns/ev/sub", 9, "per_subscriber", "9.1f"),
    Column("measure", 32, "measure", gap="  "),
    Column("value ns", 9, "value", "9.1f"),
    Column("ratio", 8, "ratio", "5.2f", "x"),
    Column("target", 9, "target", gap="  "),
    Column("result", 6, "result"),
)


def render(rows: list[Row]) -> str:
    return table(COLUMNS, rows)


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run every case, print the table (and write JSON if asked).

    Raises:
        RuntimeError: an observer did not receive every event published to it.
        OSError: the JSON file cannot be written.
    """
    opts = option_parser(__doc__).parse_args(argv)
    rounds, target_ms = run_settings(opts, 61, 20.0)
    info = print_header(
        "interpose bench_bus: publish cost per event",
        opts.quick,
        rounds,
        target_ms,
        "median ns per event",
    )
    cases = build_cases()
    started = time.perf_counter()
    measure(cases, rounds, target_ms)
    check_delivery(cases)
    rows = analyse(cases)
    print(render(rows))
    delivered = sum(c.delivery.received for c in cases)
    print(f"\n(measured in {time.perf_counter() - started:.1f} s; {delivered} events delivered)")
    if opts.json:
        write_results(opts.json, info, rounds, target_ms, cases, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
