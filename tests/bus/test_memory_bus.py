"""The in-memory bus as a pipeline user sees it: filtering, overflow policies,
isolation of failing observers, draining on close, and no cost without subscribers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import msgspec
import pytest

from interpose import (
    AbortTurn,
    Approval,
    ApprovalRequest,
    LLMRequest,
    LLMResponse,
    Pipeline,
    ToolBeforeInput,
    ToolBeforeOutput,
)
from interpose.bus import InMemoryBus
from interpose.bus import events as ev


def tool(args: dict[str, Any]) -> str:
    return "ok"


async def ids_of(pipe: Pipeline, n: int, *, start: int = 0) -> None:
    """Make ``n`` tool calls, call ids c<start>…, each publishing its tool events."""
    for i in range(start, start + n):
        await pipe.call_tool("read", {"path": "x"}, call=tool, call_id=f"c{i}")


# -- filtering and event shape -------------------------------------------------------------


async def test_events_are_filtered_by_kind(pipe: Pipeline) -> None:
    ends: list[Any] = []
    everything: list[Any] = []
    pipe.subscribe(ends.append, events={"tool_exec_end"})
    pipe.subscribe(everything.append)

    async with pipe, pipe.turn() as turn:
        await turn.call_tool("read", {}, call=tool, call_id="c1")

    assert [e.kind for e in ends] == ["tool_exec_end"]
    assert [e.kind for e in everything] == [
        "turn_started",
        "tool_exec_start",
        "tool_exec_end",
        "turn_ended",
    ]


def test_subscribe_rejects_bad_arguments(pipe: Pipeline) -> None:
    with pytest.raises(ValueError, match="tool_exec_finished"):
        pipe.subscribe(print, events={"tool_exec_finished"})
    with pytest.raises(ValueError, match="buffer"):
        pipe.subscribe(print, buffer=0)
    with pytest.raises(ValueError, match="overflow"):
        pipe.subscribe(print, overflow="drop_all")  # type: ignore[arg-type]
    assert pipe.bus.subscriptions == []
    assert pipe.bus.wanted == frozenset()


async def test_a_whole_turn_publishes_well_formed_events(
    pipe: Pipeline, recorder: list[Any]
) -> None:
    @pipe.intercept("tool.before", tools=["exec"], priority=10, id="no-rm")
    def no_rm(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if "rm" in out.args["command"]:
            out.block, out.block_reason = True, "rm is not allowed"

    @pipe.intercept("tool.before", tools=["web_fetch"], id="cache")
    def cache(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.result = "cached page"

    @pipe.approver(tools=["write"], id="no-writes")
    def no_writes(req: ApprovalRequest) -> Approval:
        return Approval.deny("read-only session")

    pipe.subscribe(recorder.append)

    async with (
        pipe,
        pipe.turn(agent_id="coder", session_key="s1", provider="p", model="m") as turn,
    ):
        await turn.message("hi")
        await turn.params()
        await turn.call_llm(LLMRequest(), call=lambda r: LLMResponse(content="x"))
        await turn.call_tool("exec", {"command": "ls"}, call=tool, call_id="ok")
        await turn.call_tool("exec", {"command": "rm -rf /"}, call=tool, call_id="blocked")
        await turn.call_tool("write", {"path": "a"}, call=tool, call_id="denied")
        await turn.call_tool("web_fetch", {"url": "u"}, call=tool, call_id="responded")

    assert [e.kind for e in recorder] == [
        "turn_started",
        "message_received",
        "params_resolved",
        "llm_request",
        "llm_response",
        "tool_exec_start",
        "tool_exec_end",
        "tool_exec_skipped",
        "tool_exec_end",
        "tool_exec_skipped",
        "tool_exec_end",
        "tool_exec_skipped",
        "tool_exec_end",
        "turn_ended",
    ]
    seqs = [e.seq for e in recorder]
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == len(seqs)
    for event in recorder:
        assert event.kind == type(event).__struct_config__.tag
        assert event.ts > 0
        assert (event.turn_id, event.agent_id, event.session_key) == (turn.turn_id, "coder", "s1")
        assert ev.decode_event(ev.encode_event(event)) == event

    starts = {e.tool_call_id for e in recorder if e.kind == "tool_exec_start"}
    assert starts == {"ok"}  # blocked, denied and responded calls never start
    skipped = {e.tool_call_id: e for e in recorder if e.kind == "tool_exec_skipped"}
    assert (skipped["blocked"].why, skipped["blocked"].decided_by) == ("blocked", "no-rm")
    assert skipped["blocked"].reason == "rm is not allowed"
    assert (skipped["denied"].why, skipped["denied"].decided_by) == ("denied", "no-writes")
    assert skipped["denied"].reason == "read-only session"
    assert (skipped["responded"].why, skipped["responded"].decided_by) == ("responded", "cache")

    ends = {e.tool_call_id: e for e in recorder if e.kind == "tool_exec_end"}
    assert {k: (e.status, e.is_error) for k, e in ends.items()} == {
        "ok": ("ok", False),
        "blocked": ("blocked", True),
        "denied": ("denied", True),
        "responded": ("responded", False),
    }
    assert ends["ok"].tool_name == "exec"
    assert isinstance(ends["ok"].duration_ns, int)
    assert ends["ok"].duration_ns > 0
    assert ends["ok"].interceptors == ("no-rm",)
    assert ends["blocked"].decided_by == "no-rm"
    assert ends["blocked"].reason == "rm is not allowed"
    assert ends["denied"].interceptors == ("no-writes",)

    params = next(e for e in recorder if e.kind == "params_resolved")
    assert (params.provider, params.model) == ("p", "m")
    llm = [e for e in recorder if e.kind.startswith("llm_")]
    assert [e.attempt for e in llm] == [1, 1]


async def test_aborted_turn_publishes_turn_aborted(pipe: Pipeline, recorder: list[Any]) -> None:
    @pipe.intercept("tool.before", id="stop")
    def stop(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        raise AbortTurn("user pressed stop")

    pipe.subscribe(recorder.append, events={"turn_started", "turn_aborted", "turn_ended"})
    async with pipe, pipe.turn() as turn:
        await turn.call_tool("read", {}, call=tool)

    assert [e.kind for e in recorder] == ["turn_started", "turn_aborted"]
    assert recorder[1].reason == "user pressed stop"
    assert recorder[1].hard is False


# -- overflow policies -------------------------------------------------------------------


async def test_block_overflow_loses_nothing_and_applies_backpressure(pipe: Pipeline) -> None:
    buffer, n = 8, 2000
    done = 0
    received: list[str] = []
    max_lag = 0

    async def slow(event: Any) -> None:
        nonlocal max_lag
        received.append(event.tool_call_id)
        max_lag = max(max_lag, done - len(received))
        await anyio.lowlevel.checkpoint()

    sub = pipe.subscribe(slow, events={"tool_exec_end"}, buffer=buffer, overflow="block")
    with anyio.fail_after(30):
        async with pipe:
            for i in range(n):
                await pipe.call_tool("read", {}, call=tool, call_id=f"c{i}")
                done += 1

    assert received == [f"c{i}" for i in range(n)]
    assert (sub.stats.delivered, sub.stats.dropped) == (n, 0)
    assert sub.stats.high_water == buffer
    # the publisher got ahead of the observer by up to the buffer, and never further
    assert buffer - 1 <= max_lag <= buffer + 1


class Gated:
    """An observer that holds on to its first event until ``gate`` is set."""

    def __init__(self) -> None:
        self.received: list[str] = []
        self.holding = anyio.Event()
        self.gate = anyio.Event()

    async def __call__(self, event: Any) -> None:
        self.received.append(event.tool_call_id)
        if not self.holding.is_set():
            self.holding.set()
            await self.gate.wait()


@pytest.mark.parametrize(
    ("overflow", "kept"),
    [
        ("drop_oldest", [f"c{i}" for i in range(42, 50)]),
        ("drop_newest", [f"c{i}" for i in range(1, 9)]),
    ],
)
async def test_drop_policies_keep_the_right_events(
    pipe: Pipeline, overflow: Any, kept: list[str]
) -> None:
    observer = Gated()
    sub = pipe.subscribe(
        observer, events={"tool_exec_end"}, buffer=8, overflow=overflow, timeout=30
    )

    with anyio.fail_after(30):
        async with pipe:
            await ids_of(pipe, 1)
            await observer.holding.wait()  # c0 is being processed; the buffer is empty
            await ids_of(pipe, 49, start=1)  # never waits, whatever the observer does
            assert sub.stats.dropped == 41
            observer.gate.set()

    assert observer.received == ["c0", *kept]
    assert sub.stats.delivered == 9
    assert sub.stats.dropped == 41
    assert sub.stats.delivered + sub.stats.dropped == 50


# -- isolation of failing observers -----------------------------------------------------------


async def test_observer_exception_is_isolated_and_counted(pipe: Pipeline) -> None:
    healthy: list[str] = []
    failures: list[Any] = []

    def broken(event: Any) -> None:
        raise RuntimeError("observer bug")

    bad = pipe.subscribe(broken, events={"tool_exec_end"})
    pipe.subscribe(lambda e: healthy.append(e.tool_call_id), events={"tool_exec_end"})
    pipe.subscribe(failures.append, events={"interceptor_failed"})

    async with pipe:
        results = [await pipe.call_tool("read", {}, call=tool, call_id=f"c{i}") for i in range(3)]

    assert [r.status for r in results] == ["ok"] * 3
    assert healthy == ["c0", "c1", "c2"]
    assert bad.stats.failed == 3
    assert pipe.stats.failures[f"observer:{bad.name}"] == 3
    assert [(e.hook, e.interceptor_id, e.error_type) for e in failures] == [
        ("observer", bad.name, "RuntimeError")
    ] * 3


async def test_observer_timeout_is_isolated_and_counted(pipe: Pipeline) -> None:
    cancelled: list[str] = []

    async def stuck(event: Any) -> None:
        try:
            await anyio.Event().wait()
        except BaseException:
            cancelled.append(event.tool_call_id)
            raise

    sub = pipe.subscribe(stuck, events={"tool_exec_end"}, timeout=0.05)
    async with pipe:
        results = [await pipe.call_tool("read", {}, call=tool, call_id=f"c{i}") for i in range(2)]

    assert [r.output for r in results] == ["ok", "ok"]
    assert cancelled == ["c0", "c1"]
    assert sub.stats.timed_out == 2
    assert pipe.stats.timeouts[f"observer:{sub.name}"] == 2


async def test_pipeline_observer_timeout_is_the_default(recorder: list[Any]) -> None:
    pipe = Pipeline(builtins=False, observer_timeout=0.05)

    async def stuck(event: Any) -> None:
        await anyio.Event().wait()

    sub = pipe.subscribe(stuck, events={"tool_exec_end"})
    with anyio.fail_after(10):
        async with pipe:
            await ids_of(pipe, 1)
    assert sub.stats.timed_out == 1


# -- closing drains ----------------------------------------------------------------------------


async def test_closing_drains_every_buffer(pipe: Pipeline) -> None:
    n = 100
    fast: list[Any] = []
    slow: list[str] = []

    async def sluggish(event: Any) -> None:
        for _ in range(3):
            await anyio.lowlevel.checkpoint()
        slow.append(event.tool_call_id)

    pipe.subscribe(fast.append, events={"tool_exec_end"})
    sub = pipe.subscribe(sluggish, events={"tool_exec_end"}, buffer=1024)

    async with pipe:
        await ids_of(pipe, n)
        pending = sub.stats.published - sub.stats.delivered

    assert pending > 0  # there was something left to drain when the block ended
    expected = [f"c{i}" for i in range(n)]
    assert slow == expected
    assert [e.tool_call_id for e in fast] == expected


async def test_a_publish_cancelled_while_it_waits_for_room_still_reaches_everyone() -> None:
    bus = InMemoryBus(observer_timeout=None)
    release = anyio.Event()
    holding = anyio.Event()
    held: list[int] = []
    free: list[int] = []

    async def slow(event: ev.ToolExecEnd) -> None:
        holding.set()
        await release.wait()
        held.append(event.seq)

    # the full buffer comes first: the publisher waits on it before reaching `free`
    slow_sub = bus.subscribe(slow, buffer=1, overflow="block")
    free_sub = bus.subscribe(lambda e: free.append(e.seq), buffer=1, overflow="block")
    with anyio.fail_after(5):
        async with bus:
            await bus.publish(ev.ToolExecEnd(seq=1))  # the slow observer holds it
            await holding.wait()
            await bus.publish(ev.ToolExecEnd(seq=2))  # fills its buffer
            async with anyio.create_task_group() as tg:
                tg.start_soon(bus.publish, ev.ToolExecEnd(seq=3))  # no room: it waits
                await anyio.wait_all_tasks_blocked()
                assert free == [1, 2]  # the third has not reached the second observer
                tg.cancel_scope.cancel()
            release.set()
    # the cancelled publish still queued its event, past the limit, for both observers
    assert held == free == [1, 2, 3]
    assert slow_sub.stats.high_water == 2
    assert (free_sub.stats.published, free_sub.stats.dropped) == (3, 0)


async def test_a_bus_cancelled_while_draining_stops_its_observers_and_counts_the_rest() -> None:
    bus = InMemoryBus(observer_timeout=None)
    holding = anyio.Event()

    async def stuck(event: ev.ToolExecEnd) -> None:
        holding.set()
        await anyio.Event().wait()

    sub = bus.subscribe(stuck)
    with anyio.fail_after(5), anyio.CancelScope() as scope:
        async with bus:
            for seq in (1, 2, 3):
                await bus.publish(ev.ToolExecEnd(seq=seq))
            await holding.wait()
            scope.cancel()  # leaving `async with bus` now: the drain is cancelled
    assert (sub.stats.published, sub.stats.delivered, sub.stats.dropped) == (3, 1, 2)


# -- no cost without subscribers -------------------------------------------------------------


def count_event_constructions(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Replace every event class in interpose.bus.events by a counting factory."""
    counts: dict[str, int] = {}

    def counting(cls: type[Any]) -> Callable[..., Any]:
        def build(*args: Any, **kwargs: Any) -> Any:
            counts[cls.__name__] = counts.get(cls.__name__, 0) + 1
            return cls(*args, **kwargs)

        return build

    for name in ev.__all__:
        value = getattr(ev, name)
        if isinstance(value, type) and issubclass(value, msgspec.Struct):
            monkeypatch.setattr(ev, name, counting(value))
    return counts


def busy_pipeline() -> Pipeline:
    pipe = Pipeline(builtins=False)

    @pipe.intercept("tool.before", id="flaky", on_error="skip")
    def flaky(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        raise ValueError("recorded, never published")

    @pipe.intercept("tool.before", tools=["exec"], priority=-1, id="block-exec")
    def block_exec(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.block = True

    @pipe.intercept("llm.after", id="noop")
    def noop(inp: Any, out: Any) -> None:
        return None

    return pipe


async def drive(pipe: Pipeline) -> None:
    async with pipe.turn() as turn:
        await turn.message("hi")
        await turn.params()
        await turn.call_llm(LLMRequest(), call=lambda r: LLMResponse())
        await turn.call_tool("read", {}, call=tool)
        await turn.call_tool("exec", {"command": "ls"}, call=tool)
    await pipe.call_tool("read", {}, call=tool)


async def test_no_event_is_built_when_nobody_subscribes(monkeypatch: pytest.MonkeyPatch) -> None:
    counts = count_event_constructions(monkeypatch)
    pipe = busy_pipeline()

    async def must_not_emit(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("emit reached with no subscribers")

    monkeypatch.setattr(pipe, "emit", must_not_emit)

    await drive(pipe)

    assert pipe.bus.wanted == frozenset()
    assert counts == {}
    assert pipe.stats.failures == {"flaky": 3}  # the failures happened, unpublished


async def test_only_subscribed_kinds_are_built(
    monkeypatch: pytest.MonkeyPatch, recorder: list[Any]
) -> None:
    counts = count_event_constructions(monkeypatch)
    pipe = busy_pipeline()
    pipe.subscribe(recorder.append, events={"tool_exec_end"})

    async with pipe:
        await drive(pipe)

    assert pipe.bus.wanted == frozenset({"tool_exec_end"})
    assert counts == {"ToolExecEnd": 3}
    assert len(recorder) == 3


async def test_unsubscribe_stops_delivery_and_the_events_are_no_longer_built() -> None:
    pipe = Pipeline(builtins=False)
    seen: list[str] = []
    sub = pipe.subscribe(lambda e: seen.append(e.tool_call_id), events={"tool_exec_end"})
    assert not pipe.bus.running
    async with pipe:
        assert pipe.bus.running
        await pipe.call_tool("exec", {}, call=lambda a: None, call_id="before")
        await pipe.bus.drain()
        pipe.bus.unsubscribe(sub)
        assert pipe.bus.wanted == frozenset()
        await pipe.call_tool("exec", {}, call=lambda a: None, call_id="after")
    assert not pipe.bus.running
    assert seen == ["before"]
