"""The metrics observer as a dashboard relies on it: calls counted by outcome, tool and
interceptor time in seconds, failures counted by who failed, and bus drops observable.

Each test reads the metrics through the SDK's ``InMemoryMetricReader`` of a private
``MeterProvider``; the global provider is never set.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    HistogramDataPoint,
    InMemoryMetricReader,
    Metric,
    NumberDataPoint,
)

from interpose import Approval, ApprovalRequest, Pipeline, ToolBeforeInput, ToolBeforeOutput
from interpose.bus import events as ev
from interpose.bus.events import Event
from interpose.observers import MetricsObserver

Attrs = frozenset[tuple[str, Any]]


def run(args: dict[str, Any]) -> str:
    return "ran"


def fail(args: dict[str, Any]) -> str:
    raise OSError("disk full")


def guarded_pipeline() -> Pipeline:
    """A pipeline whose interceptors block, answer, deny, and fail (policy skip)."""
    pipe = Pipeline(builtins=False)

    @pipe.intercept("tool.before", tools=["exec"], id="no-rm")
    def no_rm(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if "rm" in out.args["command"]:
            out.block, out.block_reason = True, "rm is not allowed"

    @pipe.intercept("tool.before", tools=["read"], id="cache")
    def cache(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if out.args["path"] == "cached":
            out.result = "from the cache"

    @pipe.intercept("tool.before", tools=["write"], id="buggy", on_error="skip")
    def buggy(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        raise KeyError("path")

    @pipe.approver(tools=["write"], id="no-etc")
    def no_etc(request: ApprovalRequest) -> Approval | None:
        return Approval.deny("not under /etc") if request.args["path"][:5] == "/etc/" else None

    return pipe


async def one_turn(pipe: Pipeline) -> None:
    """ok, blocked, responded, denied, error, and ok again."""
    async with pipe.turn(agent_id="coder") as turn:
        await turn.call_tool("exec", {"command": "ls"}, call=run, call_id="c1")
        await turn.call_tool("exec", {"command": "rm -rf /"}, call=run, call_id="c2")
        await turn.call_tool("read", {"path": "cached"}, call=run, call_id="c3")
        await turn.call_tool("write", {"path": "/etc/passwd"}, call=run, call_id="c4")
        await turn.call_tool("write", {"path": "/tmp/x"}, call=fail, call_id="c5")
        await turn.call_tool("read", {"path": "x"}, call=run, call_id="c6")


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
def observer(reader: InMemoryMetricReader) -> Iterator[MetricsObserver]:
    provider = MeterProvider(metric_readers=[reader])
    yield MetricsObserver(provider)
    provider.shutdown()


def metric(reader: InMemoryMetricReader, name: str) -> Metric | None:
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for m in scope.metrics:
                if m.name == name:
                    return m
    return None


def sums(reader: InMemoryMetricReader, name: str) -> dict[Attrs, float]:
    """A counter's value per attribute set."""
    m = metric(reader, name)
    assert m is not None, f"no metric {name}"
    points = m.data.data_points
    assert all(isinstance(p, NumberDataPoint) for p in points)
    return {frozenset((p.attributes or {}).items()): p.value for p in points}  # type: ignore[union-attr]


def histograms(reader: InMemoryMetricReader, name: str) -> dict[Attrs, HistogramDataPoint]:
    m = metric(reader, name)
    assert m is not None, f"no metric {name}"
    assert m.unit == "s"
    points = m.data.data_points
    assert all(isinstance(p, HistogramDataPoint) for p in points)
    return {frozenset((p.attributes or {}).items()): p for p in points}  # type: ignore[misc]


def tool(name: str, status: str, agent: str = "coder") -> Attrs:
    return frozenset(
        {"gen_ai.tool.name": name, "interpose.status": status, "gen_ai.agent.id": agent}.items()
    )


# -- tool calls ----------------------------------------------------------------------------


async def test_tool_calls_are_counted_by_outcome(
    reader: InMemoryMetricReader, observer: MetricsObserver
) -> None:
    pipe = guarded_pipeline()
    observer.attach(pipe)
    async with pipe:
        await one_turn(pipe)
        await one_turn(pipe)

    assert sums(reader, "interpose.tool.calls") == {
        tool("exec", "ok"): 2,
        tool("exec", "blocked"): 2,
        tool("read", "responded"): 2,
        tool("write", "denied"): 2,
        tool("write", "error"): 2,
        tool("read", "ok"): 2,
    }


async def test_a_retried_call_counts_once_and_each_run_has_its_duration(
    reader: InMemoryMetricReader, observer: MetricsObserver
) -> None:
    pipe = Pipeline(builtins=False, max_retries=2)
    failures = iter([True, False])

    def flaky(args: dict[str, Any]) -> str:
        if next(failures):
            raise OSError("busy")
        return "ran"

    pipe.intercept("tool.after", id="again")(lambda inp, out: setattr(out, "retry", inp.is_error))
    observer.attach(pipe)
    async with pipe:
        await pipe.call_tool("exec", {"command": "ls"}, call=flaky)

    assert sums(reader, "interpose.tool.calls") == {tool("exec", "ok", "main"): 1}
    points = histograms(reader, "interpose.tool.duration")
    assert {attrs: p.count for attrs, p in points.items()} == {
        tool("exec", "error", "main"): 1,
        tool("exec", "ok", "main"): 1,
    }


async def test_tool_duration_is_the_time_the_tool_ran_in_seconds(
    reader: InMemoryMetricReader, observer: MetricsObserver
) -> None:
    pipe = guarded_pipeline()
    ends: list[Event] = []
    pipe.subscribe(ends.append, events={"tool_exec_end"})
    observer.attach(pipe)
    async with pipe:
        await one_turn(pipe)

    ns = {e.tool_call_id: e.duration_ns for e in ends if isinstance(e, ev.ToolExecEnd)}
    points = histograms(reader, "interpose.tool.duration")
    # calls refused or answered before the tool ran take no tool time: not recorded
    assert set(points) == {tool("exec", "ok"), tool("write", "error"), tool("read", "ok")}
    for attrs, call_id in [
        (tool("exec", "ok"), "c1"),
        (tool("write", "error"), "c5"),
        (tool("read", "ok"), "c6"),
    ]:
        assert points[attrs].count == 1
        assert points[attrs].sum == pytest.approx(ns[call_id] / 1e9)
        assert 0 < points[attrs].sum < 1


async def test_interceptor_duration_has_a_point_per_interceptor_that_ran(
    reader: InMemoryMetricReader, observer: MetricsObserver
) -> None:
    pipe = guarded_pipeline()
    ends: list[ev.ToolExecEnd] = []
    pipe.subscribe(ends.append, events={"tool_exec_end"})
    observer.attach(pipe)
    async with pipe:
        await one_turn(pipe)

    ran = Counter(i for e in ends for i in e.interceptors)
    assert ran == {"no-rm": 2, "cache": 2, "buggy": 2, "no-etc": 2}
    points = histograms(reader, "interpose.interceptor.duration")
    assert {dict(attrs)["interpose.interceptor.id"]: p.count for attrs, p in points.items()} == ran
    assert all(p.sum > 0 for p in points.values())


# -- failures ------------------------------------------------------------------------------


async def test_failures_are_counted_by_who_failed(
    reader: InMemoryMetricReader, observer: MetricsObserver
) -> None:
    pipe = guarded_pipeline()

    def broken(event: Event) -> None:
        raise RuntimeError("out of disk")

    pipe.subscribe(broken, events={"turn_ended"}, name="uploader")
    observer.attach(pipe)
    async with pipe:
        await one_turn(pipe)

    assert sums(reader, "interpose.interceptor.failures") == {
        frozenset(
            {
                "interpose.interceptor.id": "buggy",
                "interpose.hook": "tool.before",
                "interpose.policy": "skip",
                "error.type": "KeyError",
            }.items()
        ): 2,
        frozenset(
            {
                "interpose.interceptor.id": "uploader",
                "interpose.hook": "observer",
                "interpose.policy": "skip",
                "error.type": "RuntimeError",
            }.items()
        ): 1,
    }


# -- the bus -------------------------------------------------------------------------------


async def test_bus_drops_are_observed_per_subscription(
    reader: InMemoryMetricReader, observer: MetricsObserver
) -> None:
    pipe = Pipeline(builtins=False)
    seen: list[Event] = []
    # the calls never wait, so its consumer runs only when the turn is over: one event
    # fits in its buffer, the others are dropped
    sampled = pipe.subscribe(
        seen.append, events={"tool_exec_end"}, buffer=1, overflow="drop_newest", name="sampler"
    )
    sub = observer.attach(pipe)
    async with pipe, pipe.turn() as turn:
        for i in range(50):
            await turn.call_tool("read", {}, call=run, call_id=f"c{i}")

    assert sampled.stats.dropped > 0
    assert len(seen) + sampled.stats.dropped == 50
    assert sums(reader, "interpose.bus.dropped") == {
        frozenset({"interpose.subscription": "sampler"}.items()): sampled.stats.dropped,
        frozenset({"interpose.subscription": "metrics"}.items()): 0,
    }
    assert sub.stats.dropped == 0
    assert sums(reader, "interpose.tool.calls") == {tool("read", "ok", "main"): 50}


async def test_drops_of_several_pipelines_add_up_by_name(
    reader: InMemoryMetricReader, observer: MetricsObserver
) -> None:
    dropped = 0
    for _ in range(2):
        pipe = Pipeline(builtins=False)
        lossy = pipe.subscribe(
            lambda e: None, events={"tool_exec_end"}, buffer=1, overflow="drop_newest", name="x"
        )
        observer.attach(pipe, name="m")
        observer.attach(pipe, name="m")  # attaching twice does not count a bus twice
        async with pipe, pipe.turn() as turn:
            for _ in range(10):
                await turn.call_tool("read", {}, call=run)
        dropped += lossy.stats.dropped

    assert dropped > 0
    assert sums(reader, "interpose.bus.dropped")[frozenset({("interpose.subscription", "x")})] == (
        dropped
    )


async def test_attach_subscribes_only_the_kinds_it_reads(observer: MetricsObserver) -> None:
    pipe = Pipeline(builtins=False)
    sub = observer.attach(pipe)
    assert sub.kinds == frozenset({"tool_exec_end", "interceptor_failed", "shadow_decision"})
    assert sub.overflow == "block"
    # so the pipeline builds no other event for it
    assert pipe.bus.wanted == {"tool_exec_end", "interceptor_failed", "shadow_decision"}


# -- without the SDK -----------------------------------------------------------------------


def test_importing_the_observers_does_not_import_the_sdk() -> None:
    code = (
        "import sys, interpose.observers\n"
        "from interpose.observers import AuditLog, LoggingObserver, MetricsObserver\n"
        "from interpose.bus.events import ToolExecEnd\n"
        "MetricsObserver()(ToolExecEnd(tool_name='read'))  # the global no-op provider\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry.sdk')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
