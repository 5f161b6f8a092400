"""The bus under a flood of 100,000 events.

What a user relies on when an agent produces events faster than an observer takes them:
``block`` loses nothing and holds the agent back to the observer's pace, never further
than the buffer ahead; ``drop_oldest`` / ``drop_newest`` never hold it back and account
for every event (delivered + dropped = published); an observer that raises or hangs
costs the agent nothing and every failure is counted and reported; leaving
``async with pipe`` delivers everything published before it; and a kind nobody
subscribes to is never even built.

Every wait is bounded by ``anyio.fail_after``; nothing synchronises on the clock.
"""

from __future__ import annotations

import itertools
import logging
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import anyio
import anyio.lowlevel
import msgspec
import pytest

from interpose import Pipeline, ToolBeforeInput, ToolBeforeOutput
from interpose.bus import InMemoryBus
from interpose.bus import events as ev
from interpose.bus.memory import Overflow

N = 100_000
BUFFER = 16
# generous: the floods take 1-3 s on a 2-core machine
DEADLINE = 60


def read(args: dict[str, Any]) -> str:
    return "contents"


def call_ids(n: int, *, start: int = 0) -> list[str]:
    return [f"c{i}" for i in range(start, start + n)]


def strictly_increasing(values: list[int]) -> bool:
    return all(a < b for a, b in itertools.pairwise(values))


async def until(predicate: Callable[[], bool]) -> None:
    """Give other tasks turns until ``predicate()`` holds.

    Waits on scheduler turns, never on the clock; callers bound it with ``fail_after``.
    """
    while not predicate():
        await anyio.lowlevel.checkpoint()


def quiet_observer_warnings(caplog: pytest.LogCaptureFixture) -> None:
    """Skip the bus's warning per observer failure: capturing 100,000 of them doubles a
    test's time, and the failures are checked through the counters and events."""
    caplog.set_level(logging.ERROR, logger="interpose.bus")


class Agent:
    """Counts the tool calls that have returned to the agent."""

    def __init__(self) -> None:
        self.done = 0

    async def flood(self, pipe: Pipeline, n: int, *, pause_every: int = 0) -> Counter[str]:
        """Make ``n`` tool calls in one turn (call ids c0…); returns the result statuses.

        With ``pause_every``, the agent awaits one checkpoint after that many calls, as
        an agent awaiting its model now and then would; otherwise it only ever waits
        where the pipeline makes it wait.
        """
        statuses: Counter[str] = Counter()
        async with pipe.turn(agent_id="coder", session_key="s1") as turn:
            for i in range(n):
                result = await turn.call_tool("read", {"path": "x"}, call=read, call_id=f"c{i}")
                statuses[result.status] += 1
                self.done += 1
                if pause_every and self.done % pause_every == 0:
                    await anyio.lowlevel.checkpoint()
        return statuses


class SlowObserver:
    """An async observer that gives up its turn on every event (``turns`` times) and
    records how far ahead of it the agent was; it holds on to the events listed in
    ``gates`` until the test releases them."""

    def __init__(self, agent: Agent, *, turns: int = 1, gates: Iterable[int] = ()) -> None:
        self.agent = agent
        self.turns = turns
        self.ids: list[str] = []
        self.seqs: list[int] = []
        self.max_lag = 0
        # event index -> (the observer is holding it, the test lets it go)
        self.gates = {k: (anyio.Event(), anyio.Event()) for k in gates}

    async def __call__(self, event: ev.ToolExecEnd) -> None:
        gate = self.gates.get(len(self.ids))
        self.ids.append(event.tool_call_id)
        self.seqs.append(event.seq)
        if gate is not None:
            holding, release = gate
            holding.set()
            await release.wait()
        for _ in range(self.turns):
            await anyio.lowlevel.checkpoint()
        # calls the agent finished but this observer has not received yet
        self.max_lag = max(self.max_lag, self.agent.done - len(self.ids))


# -- block: nothing lost, the agent waits ---------------------------------------------------


async def test_block_flood_loses_nothing_and_holds_the_agent_back() -> None:
    gates = (0, 1_000, 50_000, 99_000)
    pipe = Pipeline(builtins=False, observer_timeout=None)
    agent = Agent()
    observer = SlowObserver(agent, gates=gates)
    sub = pipe.subscribe(observer, events={"tool_exec_end"}, buffer=BUFFER, overflow="block")
    # per gate: (gate, calls returned when the buffer filled, calls returned after the
    # agent had many more turns, events accepted by the subscription)
    held: list[tuple[int, int, int, int]] = []

    async def hold_then_release() -> None:
        for k in gates:
            holding, release = observer.gates[k]
            await holding.wait()
            await until(lambda: sub.stats.published - sub.stats.delivered >= BUFFER)
            parked = agent.done
            for _ in range(100):
                await anyio.lowlevel.checkpoint()
            held.append((k, parked, agent.done, sub.stats.published))
            release.set()

    with anyio.fail_after(DEADLINE):
        async with pipe, anyio.create_task_group() as tg:
            tg.start_soon(hold_then_release)
            statuses = await agent.flood(pipe, N)
            # the gates were all released before the agent could finish; if the agent
            # was never held, stop waiting for it to be and let the assertions say so
            tg.cancel_scope.cancel()
            for _, release in observer.gates.values():
                release.set()

    assert statuses == {"ok": N}
    assert observer.ids == call_ids(N)  # every event, in order
    assert strictly_increasing(observer.seqs)
    stats = sub.stats
    assert (stats.published, stats.delivered, stats.dropped) == (N, N, 0)
    assert (stats.failed, stats.timed_out) == (0, 0)
    assert stats.high_water == BUFFER
    # While the observer held event k, the agent finished the calls whose events fill the
    # buffer behind it (k+1 … k+BUFFER) and then waited in call k+BUFFER+1, however many
    # turns it was given.
    assert held == [(k, k + 1 + BUFFER, k + 1 + BUFFER, k + 1 + BUFFER) for k in gates]
    # and it never ran further ahead of the observer than the buffer
    assert BUFFER - 1 <= observer.max_lag <= BUFFER


# -- drop policies: nobody waits, every event is accounted for ------------------------------


@pytest.mark.parametrize("overflow", ["drop_oldest", "drop_newest"])
async def test_drop_flood_never_holds_the_agent_back_and_the_counts_add_up(
    overflow: Overflow,
) -> None:
    pipe = Pipeline(builtins=False)
    agent = Agent()
    observer = SlowObserver(agent)
    sub = pipe.subscribe(observer, events={"tool_exec_end"}, buffer=BUFFER, overflow=overflow)

    with anyio.fail_after(DEADLINE):
        async with pipe:
            statuses = await agent.flood(pipe, N, pause_every=1_000)
            ahead = agent.done - len(observer.ids)

    assert statuses == {"ok": N}
    # the agent finished its calls far ahead of the observer; under `block` it could
    # never get more than BUFFER ahead
    assert ahead > 10 * BUFFER
    stats = sub.stats
    assert stats.published == N
    assert stats.delivered + stats.dropped == N  # drained: nothing left in the buffer
    assert stats.delivered == len(observer.ids)
    assert stats.dropped > 0
    assert stats.high_water == BUFFER
    assert strictly_increasing(observer.seqs)  # what is kept keeps its order
    if overflow == "drop_oldest":
        # the buffer always holds the newest events: the last ones published all arrive
        assert observer.ids[-BUFFER:] == call_ids(BUFFER, start=N - BUFFER)
    else:
        # a full buffer refuses new events: the first ones published all arrive
        assert observer.ids[:BUFFER] == call_ids(BUFFER)
        assert observer.ids[-1] != f"c{N - 1}"


# -- observers that raise or hang ------------------------------------------------------------


async def test_raising_and_hanging_observers_cost_the_agent_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    quiet_observer_warnings(caplog)
    hang_every = 25_000
    pipe = Pipeline(builtins=False)
    healthy: list[str] = []
    reports: list[ev.InterceptorFailed] = []
    cancelled: list[str] = []
    seen = 0

    def broken(event: ev.ToolExecEnd) -> None:
        raise RuntimeError("observer bug")

    async def hangs(event: ev.ToolExecEnd) -> None:
        nonlocal seen
        seen += 1
        if (seen - 1) % hang_every == 0:
            try:
                await anyio.Event().wait()  # never set
            finally:
                cancelled.append(event.tool_call_id)

    broken_sub = pipe.subscribe(broken, events={"tool_exec_end"}, name="broken")
    hangs_sub = pipe.subscribe(hangs, events={"tool_exec_end"}, timeout=0.02, name="hangs")
    healthy_sub = pipe.subscribe(lambda e: healthy.append(e.tool_call_id), events={"tool_exec_end"})
    # room for every report: how reports reach a full buffer is another test's subject
    reports_sub = pipe.subscribe(reports.append, events={"interceptor_failed"}, buffer=2 * N)

    with anyio.fail_after(DEADLINE):  # leaving `async with pipe` does not hang either
        async with pipe:
            statuses = await Agent().flood(pipe, N)

    assert statuses == {"ok": N}
    assert healthy == call_ids(N)
    assert (healthy_sub.stats.delivered, healthy_sub.stats.failed) == (N, 0)
    assert (broken_sub.stats.delivered, broken_sub.stats.failed) == (N, N)
    assert broken_sub.stats.timed_out == 0
    assert (hangs_sub.stats.delivered, hangs_sub.stats.dropped) == (N, 0)
    assert (hangs_sub.stats.timed_out, hangs_sub.stats.failed) == (N // hang_every, 0)
    assert cancelled == [f"c{i}" for i in range(0, N, hang_every)]
    assert pipe.stats.failures == {"observer:broken": N, "observer:hangs": N // hang_every}
    assert pipe.stats.timeouts == {"observer:hangs": N // hang_every}

    # every failure is published once as interceptor_failed, and none is about a report
    assert reports_sub.stats.dropped == 0
    assert Counter((r.interceptor_id, r.error_type, r.timed_out) for r in reports) == {
        ("broken", "RuntimeError", False): N,
        ("hangs", "TimeoutError", True): N // hang_every,
    }
    assert {(r.hook, r.policy, r.agent_id, r.session_key) for r in reports} == {
        ("observer", "skip", "coder", "s1")
    }
    assert {r.error for r in reports if r.interceptor_id == "broken"} == {"observer bug"}


async def test_failure_reports_are_not_lost_when_their_block_buffer_is_full(
    caplog: pytest.LogCaptureFixture,
) -> None:
    quiet_observer_warnings(caplog)
    n = 10_000
    pipe = Pipeline(builtins=False)
    reports: list[ev.InterceptorFailed] = []

    def broken(event: ev.ToolExecEnd) -> None:
        raise RuntimeError("observer bug")

    pipe.subscribe(broken, events={"tool_exec_end"}, buffer=1024, name="broken")
    reports_sub = pipe.subscribe(reports.append, events={"interceptor_failed"}, buffer=8)

    with anyio.fail_after(DEADLINE):
        async with pipe:
            await Agent().flood(pipe, n)

    assert pipe.stats.failures == {"observer:broken": n}
    # The broken observer's task reports up to 1024 failures in one go, far more than
    # the buffer takes; it must not wait on the bus, and `block` loses nothing.
    assert len(reports) == n
    assert (reports_sub.stats.delivered, reports_sub.stats.dropped) == (n, 0)


# -- closing drains --------------------------------------------------------------------------


async def test_leaving_the_pipeline_delivers_the_whole_flood_first(
    caplog: pytest.LogCaptureFixture,
) -> None:
    quiet_observer_warnings(caplog)
    # no observer timeout: the sync observer's consumer holds the event loop while it
    # works through its backlog, and the slow observer's clock would run meanwhile
    pipe = Pipeline(builtins=False, observer_timeout=None)
    agent = Agent()
    slow = SlowObserver(agent, turns=2)
    reports: list[ev.InterceptorFailed] = []

    def broken(event: ev.ToolExecEnd) -> None:
        raise RuntimeError("observer bug")

    # Buffers that hold the whole flood: the agent never waits, so it is all still
    # pending when the block ends.  The broken observer reports its failures while the
    # bus drains, to a subscription made first (its consumer is the first to find its
    # buffer empty): those reports must arrive too.
    reports_sub = pipe.subscribe(reports.append, events={"interceptor_failed"}, buffer=N)
    slow_sub = pipe.subscribe(slow, events={"tool_exec_end"}, buffer=N)
    broken_sub = pipe.subscribe(broken, events={"tool_exec_end"}, buffer=N)

    with anyio.fail_after(DEADLINE):
        async with pipe:
            await agent.flood(pipe, N)
            pending = slow_sub.stats.published - slow_sub.stats.delivered
            unreported = N - len(reports)

    assert pending > BUFFER
    assert unreported > BUFFER
    assert slow.ids == call_ids(N)
    assert (slow_sub.stats.delivered, broken_sub.stats.failed) == (N, N)
    assert len(reports) == reports_sub.stats.delivered == N
    assert {r.interceptor_id for r in reports} == {broken_sub.name}
    assert all(sub.idle for sub in pipe.bus.subscriptions)


# -- no event is built for a kind nobody wants -------------------------------------------------


async def test_a_kind_nobody_subscribes_to_is_never_built(monkeypatch: pytest.MonkeyPatch) -> None:
    built: Counter[str] = Counter()

    def counting(cls: type[Any]) -> Callable[..., Any]:
        def build(**fields: Any) -> Any:
            built[cls.__name__] += 1
            return cls(**fields)

        return build

    for name in ev.__all__:
        value = getattr(ev, name)
        if isinstance(value, type) and issubclass(value, msgspec.Struct):
            monkeypatch.setattr(ev, name, counting(value))

    pipe = Pipeline(builtins=False)

    @pipe.intercept("tool.before", tools=["exec"], id="no-exec")
    def no_exec(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.block = True

    ends: list[ev.TurnEnded] = []
    starts: list[ev.ToolExecStart] = []
    pipe.subscribe(ends.append, events={"turn_ended"})
    n = 1_000

    async def calls(k: int) -> None:
        async with pipe.turn() as turn:
            for _ in range(k):
                await turn.call_tool("read", {}, call=read)
                await turn.call_tool("exec", {"command": "ls"}, call=read)  # blocked

    with anyio.fail_after(DEADLINE):
        async with pipe:
            await calls(n)
            assert dict(built) == {"TurnEnded": 1}
            pipe.subscribe(starts.append, events={"tool_exec_start"})
            await calls(n)

    # only the read calls start; the blocked exec calls never do, and skipped/end events
    # stay unbuilt because nobody asked for them
    assert dict(built) == {"TurnEnded": 2, "ToolExecStart": n}
    assert len(starts) == n
    assert {e.tool_name for e in starts} == {"read"}
    assert len(ends) == 2


# -- the bus on its own --------------------------------------------------------------------------


async def test_each_subscription_keeps_its_own_policy_and_books() -> None:
    """One flood, four subscriptions: the lossless ones get everything, the lossy ones
    account for everything, and leaving ``async with bus`` drains them all."""
    bus = InMemoryBus(observer_timeout=None)
    fast: list[int] = []
    paced: list[int] = []
    lossy: dict[Overflow, list[int]] = {"drop_oldest": [], "drop_newest": []}

    async def pacing(event: ev.ToolExecEnd) -> None:
        paced.append(event.seq)
        await anyio.lowlevel.checkpoint()

    def lossy_observer(into: list[int]) -> Callable[[ev.ToolExecEnd], Any]:
        async def observe(event: ev.ToolExecEnd) -> None:
            into.append(event.seq)
            for _ in range(3):  # slower than the block subscription that sets the pace
                await anyio.lowlevel.checkpoint()

        return observe

    fast_sub = bus.subscribe(lambda e: fast.append(e.seq), buffer=BUFFER)
    paced_sub = bus.subscribe(pacing, buffer=BUFFER, overflow="block")
    lossy_subs = {
        policy: bus.subscribe(lossy_observer(into), buffer=BUFFER, overflow=policy)
        for policy, into in lossy.items()
    }

    with anyio.fail_after(DEADLINE):
        async with bus:
            for i in range(1, N + 1):
                await bus.publish(ev.ToolExecEnd(seq=i, tool_call_id=f"c{i}"))

    everything = list(range(1, N + 1))
    assert fast == paced == everything
    for sub in (fast_sub, paced_sub):
        assert (sub.stats.published, sub.stats.delivered, sub.stats.dropped) == (N, N, 0)
        assert sub.stats.high_water <= BUFFER
    for policy, sub in lossy_subs.items():
        stats = sub.stats
        assert stats.published == N
        assert stats.delivered + stats.dropped == N
        assert stats.delivered == len(lossy[policy])
        assert stats.dropped > 0
        assert stats.high_water == BUFFER
        assert strictly_increasing(lossy[policy])
    assert lossy["drop_oldest"][-1] == N
    assert lossy["drop_newest"][:BUFFER] == list(range(1, BUFFER + 1))


async def test_concurrent_publishers_share_a_block_subscription() -> None:
    publishers, each = 4, N // 4
    bus = InMemoryBus(observer_timeout=None)
    received: list[ev.ToolExecEnd] = []

    async def observe(event: ev.ToolExecEnd) -> None:
        received.append(event)
        await anyio.lowlevel.checkpoint()

    sub = bus.subscribe(observe, buffer=BUFFER, overflow="block")

    finished = 0

    async def publish(agent: str) -> None:
        nonlocal finished
        for i in range(each):
            await bus.publish(ev.ToolExecEnd(seq=i, agent_id=agent))
        finished += 1

    with anyio.fail_after(DEADLINE):
        async with bus, anyio.create_task_group() as tg:
            for p in range(publishers):
                tg.start_soon(publish, f"a{p}")
            # Once every task waits, nothing can move again: a publisher still unfinished
            # then was never woken (without this, a deadlock would last until DEADLINE).
            await anyio.wait_all_tasks_blocked()
            stuck = publishers - finished
            tg.cancel_scope.cancel()

    assert stuck == 0
    assert (sub.stats.delivered, sub.stats.dropped) == (N, 0)
    for p in range(publishers):  # each publisher's events arrive in its order
        assert [e.seq for e in received if e.agent_id == f"a{p}"] == list(range(each))
