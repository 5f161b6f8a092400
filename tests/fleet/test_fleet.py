"""The fleet bus against a real redis-server: publishing from agent processes, consuming
with a consumer group at least once, and what happens on each failure.

``redis_server`` is one server for the whole session, without persistence; tests keep
apart by using streams of their own (``stream``).  ``make_redis`` starts more (the
restart test needs one with an append-only file, and kills it).  Every server runs in a
temporary directory of its own and is killed at the end: only the processes these
fixtures started.  Without ``redis-server`` (scripts/test.sh installs it with apt) the
tests are skipped, except under CI (``CI=true``), where a missing server fails the run.
(The fixtures live here, not in a conftest.py: mypy would see two top-level
``conftest`` modules, this one and tests/adapters', both directories being on its path.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import msgspec
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from redis.asyncio import Redis
from redis_helpers import RedisServer, find_redis_server, free_port

from interpose import Pipeline
from interpose.bus.events import Event, InterceptorFailed, ToolExecEnd, encode_event
from interpose.bus.memory import Overflow
from interpose.bus.redis import (
    RedisStreamConsumer,
    RedisStreamPublisher,
    read_entries,
)
from interpose.bus.redis.common import raw_entries

WORKER = Path(__file__).with_name("fleet_worker.py")
pytestmark = pytest.mark.integration


def _echo(args: dict[str, Any]) -> Any:
    return args


def _worker(*argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def _stop(processes: list[subprocess.Popen[str]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=10)  # reaps it and closes its pipes


async def _consume_until(
    consumers: list[RedisStreamConsumer], done: anyio.Event, seconds: float
) -> None:
    """Run ``consumers`` until ``done`` is set, for at most ``seconds``."""
    with anyio.fail_after(seconds):
        async with anyio.create_task_group() as tg:
            for consumer in consumers:
                tg.start_soon(consumer.run)
            await done.wait()
            for consumer in consumers:
                consumer.stop()


async def _xrange(client: Redis, key: str) -> list[tuple[bytes, dict[bytes, bytes]]]:
    entries: Any = await client.xrange(key)
    return [(entry_id, dict(fields)) for entry_id, fields in entries]


def _fields(event: Event, producer: bytes, n: int) -> dict[Any, Any]:
    return {b"e": encode_event(event), b"p": producer, b"n": str(n).encode()}


async def _three_calls_and_group_g(client: Redis, stream: str) -> None:
    """Append the ends of tool calls c1, c2, c3 (producer ``p``), then create group ``g``
    reading the stream from its start."""
    for n in range(1, 4):
        event = ToolExecEnd(ts=time.time_ns(), tool_call_id=f"c{n}")
        await client.xadd(stream, _fields(event, b"p", n))
    await client.xgroup_create(stream, "g", "0")


# -- fixtures ---------------------------------------------------------------------------


@pytest.fixture
def make_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., RedisServer]]:
    """``make_redis(aof=False)``: start another server; all of them are killed after the
    test."""
    binary = find_redis_server()
    servers: list[RedisServer] = []

    def make(*, aof: bool = False) -> RedisServer:
        server = RedisServer(binary, tmp_path_factory.mktemp("redis"), aof=aof)
        servers.append(server)
        server.start()
        return server

    yield make
    for server in servers:
        server.kill()


@pytest.fixture
def stream() -> str:
    """A stream key of this test's own."""
    return f"test:{uuid.uuid4().hex[:12]}:events"


# -- reply shapes (no server) -------------------------------------------------------------


def test_read_entries_takes_both_reply_shapes() -> None:
    fields = {b"e": b"{}", b"p": b"h:1:x", b"n": b"1"}
    resp2 = [[b"s", [(b"1-0", fields), (b"1-1", fields)]]]
    resp3 = {b"s": [[(b"1-0", fields), (b"1-1", fields)]]}
    expected = [(b"1-0", fields), (b"1-1", fields)]
    assert read_entries(resp2) == expected
    assert read_entries(resp3) == expected
    nothing: list[Any] = [[], {}, None]
    assert [read_entries(reply) for reply in nothing] == [[], [], []]
    # a pending entry trimmed from the stream comes back without fields
    assert read_entries([[b"s", [(b"1-0", None), (b"2-0", {})]]]) == [(b"1-0", {}), (b"2-0", {})]
    # a raw reply: flat field lists, str ids
    assert read_entries([["s", [("3-0", ["e", "x", "p", "y"])]]]) == [
        (b"3-0", {b"e": b"x", b"p": b"y"})
    ]
    # raw replies (the consumer's own reads, without redis-py's response callbacks)
    flat = [b"e", b"{}", b"p", b"h:1:x", b"n", b"1"]
    raw2 = [[b"s", [[b"1-0", flat], [b"1-1", flat]]]]
    raw3 = {b"s": [[b"1-0", flat], [b"1-1", flat]]}
    assert raw_entries(raw2) == raw_entries(raw3) == expected
    assert raw_entries(None) == raw_entries([]) == raw_entries({}) == []
    assert raw_entries([[b"s", [[b"1-0", None]]]]) == [(b"1-0", {})]
    with pytest.raises(ValueError, match="unexpected XREADGROUP reply"):
        read_entries(42)
    with pytest.raises(ValueError, match="unexpected stream entry"):
        read_entries([[b"s", [b"1-0"]]])


def test_bad_arguments_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="not a Redis URL"):
        RedisStreamPublisher("http://127.0.0.1:6379")
    with pytest.raises(ValueError, match="overflow must be"):
        RedisStreamPublisher(overflow="drop")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="maxlen must be"):
        RedisStreamPublisher(maxlen=0)
    with pytest.raises(ValueError, match="not a Redis URL"):
        RedisStreamConsumer("127.0.0.1:6379")
    with pytest.raises(ValueError, match="unknown event kind"):
        RedisStreamConsumer().subscribe(print, events={"tool_end"})
    with pytest.raises(ValueError, match="max_deliveries must be"):
        RedisStreamConsumer(max_deliveries=0)


# -- with a server -----------------------------------------------------------------------


@pytest.mark.parametrize("protocol", [2, 3])
async def test_events_round_trip_as_the_same_structs(
    redis_server: RedisServer, stream: str, protocol: int
) -> None:
    pipe = Pipeline(builtins=False)
    publisher = RedisStreamPublisher(redis_server.url, stream=stream, protocol=protocol)  # type: ignore[arg-type]
    publisher.attach(pipe)
    local: list[Event] = []
    pipe.subscribe(local.append)
    async with pipe:
        for i in range(5):
            await pipe.call_tool("read", {"i": i}, call=_echo, call_id=f"c{i}", agent_id="coder")
    assert publisher.stats.published == len(local) == 20  # 4 events per one-call turn
    assert publisher.stats.dropped == publisher.stats.lost == 0

    reader = InMemoryMetricReader()
    consumer = RedisStreamConsumer(
        redis_server.url,
        stream,
        "g",
        "c1",
        protocol=protocol,  # type: ignore[arg-type]
        meter_provider=MeterProvider(metric_readers=[reader]),
    )
    got: list[Event] = []
    ends: list[Event] = []
    consumer.subscribe(got.append)
    consumer.subscribe(ends.append, events={"tool_exec_end"})
    with anyio.fail_after(20):
        await consumer.run(until_caught_up=True)
    assert got == local  # the same tagged union, field for field, in order
    assert [e.tool_call_id for e in ends if isinstance(e, ToolExecEnd)] == [
        f"c{i}" for i in range(5)
    ]
    assert consumer.lag == 0
    assert consumer.pending == 0
    assert consumer.stats.delivered == consumer.stats.acked == 20
    data = reader.get_metrics_data()
    assert data is not None
    points = {
        metric.name: [p.value for p in metric.data.data_points]  # type: ignore[union-attr]
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
    }
    assert points["interpose.fleet.delivered"] == [20]
    assert points["interpose.fleet.pending"] == [0]
    assert points["interpose.fleet.lag"] == [0]


async def test_a_publisher_subscribed_by_hand_sends_each_event_itself(
    redis_server: RedisServer, stream: str
) -> None:
    pipe = Pipeline(builtins=False)
    publisher = RedisStreamPublisher(redis_server.url, stream=stream)
    pipe.subscribe(publisher, events={"tool_exec_end"})  # no attach(): no writer task
    async with pipe:
        for i in range(3):
            await pipe.call_tool("read", {}, call=_echo, call_id=f"c{i}")
    assert publisher.stats.published == 3
    assert publisher.stats.batches == 3  # one round trip per event
    await publisher.aclose()
    async with Redis.from_url(redis_server.url) as client:
        entries = await _xrange(client, stream)
    assert [msgspec.json.decode(f[b"e"])["tool_call_id"] for _, f in entries] == [
        "c0",
        "c1",
        "c2",
    ]
    assert [f[b"n"] for _, f in entries] == [b"1", b"2", b"3"]


async def test_three_publisher_processes_two_consumers_deliver_every_event_once(
    redis_server: RedisServer, stream: str
) -> None:
    per_process = 20_000
    total = 3 * per_process
    delivered: dict[str, list[tuple[str, str]]] = {"a": [], "b": []}
    all_in = anyio.Event()
    consumers = []
    for name, seen in delivered.items():
        consumer = RedisStreamConsumer(redis_server.url, stream, "fleet", name, batch=500)

        def record(event: Event, seen: list[tuple[str, str]] = seen) -> None:
            assert isinstance(event, ToolExecEnd)
            seen.append((event.agent_id, event.tool_call_id))
            if len(delivered["a"]) + len(delivered["b"]) >= total:
                all_in.set()

        consumer.subscribe(record)
        consumers.append(consumer)
    publishers = [
        _worker("publish", redis_server.url, stream, f"agent-{k}", str(per_process))
        for k in range(3)
    ]
    try:
        await _consume_until(consumers, all_in, 100)
        for process in publishers:
            out, err = process.communicate(timeout=30)
            assert process.returncode == 0, err
            stats = msgspec.json.decode(out.strip().splitlines()[-1])
            assert stats["published"] == per_process
            assert stats["dropped"] == stats["lost"] == 0
    finally:
        _stop(publishers)
    everything = delivered["a"] + delivered["b"]
    assert len(everything) == total
    assert set(everything) == {
        (f"agent-{k}", f"c{i}") for k in range(3) for i in range(per_process)
    }
    assert delivered["a"], "both consumers of the group took a share"
    assert delivered["b"], "both consumers of the group took a share"
    async with Redis.from_url(redis_server.url) as client:
        info = await client.xinfo_groups(stream)
    assert info[0]["pending"] == 0
    assert info[0]["lag"] == 0


async def test_a_copy_of_an_event_is_delivered_once(redis_server: RedisServer, stream: str) -> None:
    event = ToolExecEnd(ts=time.time_ns(), seq=1, tool_name="exec", tool_call_id="c1")
    fields = _fields(event, b"host:1:abc", 1)
    async with Redis.from_url(redis_server.url) as client:
        # a producer that resent a batch whose reply it lost: the same (p, n) twice
        await client.xadd(stream, fields)
        await client.xadd(stream, fields)
        other = {**fields, b"p": b"host:2:def"}  # another producer's seq 1: not a copy
        await client.xadd(stream, other)
    got: list[Event] = []
    consumer = RedisStreamConsumer(redis_server.url, stream, "g", "c")
    consumer.subscribe(got.append)
    with anyio.fail_after(20):
        await consumer.run(until_caught_up=True)
    assert got == [event, event]
    assert consumer.stats.duplicates == 1
    assert consumer.pending == 0
    # a second consumer of the same group, later (the copy arrives after a restart)
    async with Redis.from_url(redis_server.url) as client:
        await client.xadd(stream, fields)
    again = RedisStreamConsumer(redis_server.url, stream, "g", "d")
    again.subscribe(got.append)
    with anyio.fail_after(20):
        await again.run(until_caught_up=True)
    assert got == [event, event]
    assert again.stats.duplicates == 1


async def test_a_sigkilled_consumers_pending_events_are_claimed_by_the_other(
    redis_server: RedisServer, stream: str, tmp_path: Path
) -> None:
    count = 400
    pipe = Pipeline(builtins=False)
    RedisStreamPublisher(redis_server.url, stream=stream).attach(pipe, events={"tool_exec_end"})
    async with pipe:
        for i in range(count):
            await pipe.call_tool("read", {}, call=_echo, call_id=f"c{i}", agent_id="a")

    out = tmp_path / "victim.txt"
    out.touch()
    # batches of 50, 20 ms per event: killed after ~60 events, in its second batch
    victim = _worker("consume", redis_server.url, stream, "g", "victim", str(out), "0.02")
    try:
        with anyio.fail_after(30):
            while len(out.read_text().splitlines()) < 60:
                assert victim.poll() is None, victim.stderr.read() if victim.stderr else ""
                await anyio.sleep(0.01)
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=10)
    finally:
        _stop([victim])
    before_victim = out.read_text().splitlines()
    async with Redis.from_url(redis_server.url) as client:
        rows = await client.xpending_range(stream, "g", "-", "+", 1000, consumername="victim")
    left = {row["message_id"] for row in rows}
    assert 0 < len(left) <= 50, "killed in the middle of a batch, with entries pending"

    got: list[tuple[str, bytes]] = []
    rescuer = RedisStreamConsumer(redis_server.url, stream, "g", "rescuer", claim_idle=0.2)
    entry_ids: dict[str, bytes] = {}
    async with Redis.from_url(redis_server.url) as client:
        for entry_id, fields in await _xrange(client, stream):
            entry_ids[msgspec.json.decode(fields[b"e"])["tool_call_id"]] = entry_id

    victim_ids = {line.split()[1] for line in before_victim}
    all_in = anyio.Event()

    def record(event: Event) -> None:
        call_id = getattr(event, "tool_call_id", "")
        got.append((call_id, entry_ids[call_id]))
        if len(victim_ids | {c for c, _ in got}) >= count:
            all_in.set()

    rescuer.subscribe(record)
    await _consume_until([rescuer], all_in, 30)
    assert {c for c, _ in got} | victim_ids == {f"c{i}" for i in range(count)}
    assert left <= {entry_id for _, entry_id in got}, "the victim's pending entries"
    assert rescuer.stats.claimed >= len(left)
    async with Redis.from_url(redis_server.url) as client:
        info = await client.xinfo_groups(stream)
    assert info[0]["pending"] == 0


async def test_redis_restarted_while_publishing_with_block_loses_nothing(
    make_redis: Callable[..., RedisServer], stream: str
) -> None:
    server = make_redis(aof=True)  # appendfsync always: an acknowledged XADD is on disk
    count = 5_000
    pipe = Pipeline(builtins=False)
    publisher = RedisStreamPublisher(
        server.url, stream=stream, queue=256, batch=128, backoff=(0.02, 0.2), close_timeout=30
    )
    publisher.attach(pipe, events={"tool_exec_end"}, buffer=64)
    failures: list[Event] = []
    pipe.subscribe(failures.append, events={"interceptor_failed"})
    statuses: set[str] = set()
    with anyio.fail_after(60):
        async with pipe, anyio.create_task_group() as tg:

            async def restart() -> None:
                # a counter of the publisher's own: polled, bounded by the fail_after
                while publisher.stats.published < count // 4:  # noqa: ASYNC110
                    await anyio.sleep(0.005)
                server.kill(signal.SIGKILL)
                await anyio.sleep(0.5)  # the agent goes on; the publisher queues and waits
                server.start()

            tg.start_soon(restart)
            for i in range(count):
                result = await pipe.call_tool("read", {}, call=_echo, call_id=f"c{i}")
                statuses.add(result.status)
    assert statuses == {"ok"}, "a Redis outage never fails a tool call"
    assert publisher.stats.errors >= 1, "the restart happened while publishing"
    assert publisher.stats.dropped == publisher.stats.lost == 0
    assert any(isinstance(e, InterceptorFailed) and e.policy == "retry" for e in failures)
    got: list[str] = []
    consumer = RedisStreamConsumer(server.url, stream, "g", "c")
    consumer.subscribe(lambda e: got.append(e.tool_call_id), events={"tool_exec_end"})
    with anyio.fail_after(30):
        await consumer.run(until_caught_up=True)
    assert sorted(got) == sorted(f"c{i}" for i in range(count))
    assert len(got) == count, "copies from resent batches were dropped"


async def test_a_poison_event_lands_in_the_dead_letter_stream(
    redis_server: RedisServer, stream: str
) -> None:
    good = [ToolExecEnd(ts=time.time_ns(), tool_call_id=f"c{i}") for i in range(3)]
    poison = ToolExecEnd(ts=time.time_ns(), tool_call_id="poison")
    async with Redis.from_url(redis_server.url) as client:
        for n, event in enumerate([good[0], poison, good[1]], 1):
            await client.xadd(stream, _fields(event, b"p", n))
        await client.xadd(stream, {**_fields(good[2], b"p", 4), b"e": b"{not json"})
        await client.xadd(stream, _fields(good[2], b"p", 5))
    got: list[str] = []
    attempts: list[str] = []

    def observer(event: Event) -> None:
        call_id = getattr(event, "tool_call_id", "")
        attempts.append(call_id)
        if call_id == "poison":
            raise ValueError("cannot handle this one")
        got.append(call_id)

    consumer = RedisStreamConsumer(
        redis_server.url, stream, "g", "c", max_deliveries=3, retry_delay=0.05
    )
    consumer.subscribe(observer)
    with anyio.fail_after(20):
        await consumer.run(until_caught_up=True)
    assert got == ["c0", "c1", "c2"]
    assert attempts.count("poison") == 3
    assert consumer.stats.dead_lettered == 2
    assert consumer.pending == 0
    async with Redis.from_url(redis_server.url) as client:
        dead = await _xrange(client, f"{stream}:dead")
    errors = sorted(fields[b"error"].decode() for _, fields in dead)
    assert errors[0].startswith("failed 3 times: observer ")
    assert "ValueError: cannot handle this one" in errors[0]
    assert errors[1].startswith("undecodable: ")
    assert {fields[b"group"] for _, fields in dead} == {b"g"}


async def test_a_consumer_restarted_under_its_name_delivers_its_own_pending(
    redis_server: RedisServer, stream: str
) -> None:
    async with Redis.from_url(redis_server.url) as client:
        await _three_calls_and_group_g(client, stream)
        # an earlier life of consumer "c" read two entries and died before acking them
        reply = await client.xreadgroup("g", "c", {stream: ">"}, count=2)
        assert len(read_entries(reply)) == 2
    got: list[str] = []
    consumer = RedisStreamConsumer(redis_server.url, stream, "g", "c", claim_idle=60)
    consumer.subscribe(lambda e: got.append(e.tool_call_id))
    with anyio.fail_after(20):
        await consumer.run(until_caught_up=True)
    assert got == ["c1", "c2", "c3"]
    assert consumer.stats.recovered == 2
    assert consumer.stats.claimed == 0
    assert consumer.pending == 0


async def test_trimmed_pending_entries_are_counted_lost(
    redis_server: RedisServer, stream: str
) -> None:
    async with Redis.from_url(redis_server.url) as client:
        await _three_calls_and_group_g(client, stream)
        await client.xreadgroup("g", "dead", {stream: ">"}, count=3)
        await client.xtrim(stream, maxlen=0, approximate=False)  # maxlen below the backlog
    consumer = RedisStreamConsumer(redis_server.url, stream, "g", "c", claim_idle=0.05)
    got: list[Event] = []
    consumer.subscribe(got.append)
    await anyio.sleep(0.1)
    with anyio.fail_after(20):
        await consumer.run(until_caught_up=True)
    assert got == []
    assert consumer.stats.lost == 3
    assert consumer.pending == 0


async def test_a_down_redis_never_fails_a_tool_call_and_drops_are_counted() -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    pipe = Pipeline(builtins=False)
    publisher = RedisStreamPublisher(
        url, overflow="drop_newest", queue=8, backoff=(0.01, 0.05), close_timeout=0.2
    )
    sub = publisher.attach(pipe, buffer=8)
    failures: list[Event] = []
    pipe.subscribe(failures.append, events={"interceptor_failed"})
    with anyio.fail_after(20):
        async with pipe:
            results = [
                await pipe.call_tool("read", {}, call=_echo, call_id=f"c{i}") for i in range(50)
            ]
            await anyio.sleep(0.1)
    assert {r.status for r in results} == {"ok"}
    stats = publisher.stats
    assert stats.published == 0
    assert stats.dropped > sub.stats.dropped > 0  # the bus's drops are the publisher's too
    # 4 events per call, the outage report and the report of what was lost at exit:
    # each dropped by the bus (the agent runs ahead of the subscription) or by the
    # publisher, or lost when it closed; all of it counted in publisher.stats (but the
    # loss report itself, which the publisher does not count again)
    assert sub.stats.published == 200 + len(failures)
    assert stats.dropped + stats.lost == sub.stats.published - 1
    assert stats.lost > 0
    assert not publisher.connected
    outage, lost = [e for e in failures if isinstance(e, InterceptorFailed)]
    assert outage.hook == lost.hook == "observer"
    assert outage.interceptor_id == lost.interceptor_id == "redis interpose:events"
    assert outage.error_type == "ConnectionError"
    assert (lost.error_type, lost.policy) == ("EventsLost", "drop")
    assert lost.error.startswith(f"{stats.lost} event(s) not sent to Redis")


# -- config and command line -------------------------------------------------------------


async def _publish_sample(url: str, stream: str) -> None:
    """Three calls of agent "coder": one ok, one blocked by an interceptor, one failing."""
    pipe = Pipeline(builtins=False)

    @pipe.intercept("tool.before", tools="exec", id="no-deploy")
    def no_deploy(inp: Any, out: Any) -> None:
        if "deploy" in out.args.get("command", ""):
            out.block, out.block_reason = True, "deploys need a ticket"

    def fail(args: dict[str, Any]) -> Any:
        raise OSError("disk full")

    RedisStreamPublisher(url, stream=stream).attach(pipe)
    async with pipe:
        await pipe.call_tool("exec", {"command": "ls"}, call=_echo, agent_id="coder")
        await pipe.call_tool("exec", {"command": "make deploy"}, call=_echo, agent_id="coder")
        await pipe.call_tool("write", {"path": "a"}, call=fail, agent_id="coder")


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "interpose.cli", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def test_tail_prints_a_table_and_exits_when_caught_up(
    redis_server: RedisServer, stream: str
) -> None:
    await _publish_sample(redis_server.url, stream)
    run = await anyio.to_thread.run_sync(
        _cli, "tail", "--redis", redis_server.url, "--stream", stream
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].split() == ["TIME", "AGENT", "TOOL", "DECISION", "DURATION", "REASON"]
    rows = [line.split(None, 4) for line in lines[1:]]
    assert [row[1:4] for row in rows] == [
        ["coder", "exec", "ok"],
        ["coder", "exec", "blocked"],
        ["coder", "write", "error"],
    ]
    assert lines[2].endswith("deploys need a ticket (by no-deploy)")
    # its own group is gone: tail leaves nothing behind
    async with Redis.from_url(redis_server.url) as client:
        assert await client.xinfo_groups(stream) == []
    only = await anyio.to_thread.run_sync(
        _cli, "tail", "--redis", redis_server.url, "--stream", stream, "--events", "turn_started"
    )
    assert len(only.stdout.splitlines()) == 1 + 3
    bad = await anyio.to_thread.run_sync(
        _cli, "tail", "--redis", redis_server.url, "--events", "tool_end"
    )
    assert bad.returncode == 2
    assert "unknown event kind(s) tool_end" in bad.stderr
    closed = f"redis://127.0.0.1:{free_port()}/0"
    down = await anyio.to_thread.run_sync(_cli, "tail", "--redis", closed)
    assert down.returncode == 1
    # one line naming the URL, and no table header before it
    [line] = down.stderr.splitlines()
    assert line.startswith(f"interpose tail: cannot reach Redis at {closed}: ConnectionError: ")
    assert down.stdout == ""


def test_audit_against_an_unreachable_redis_fails_and_writes_nothing(
    make_redis: Callable[..., RedisServer], tmp_path: Path
) -> None:
    server = make_redis()
    server.kill()  # it answered once; now nothing listens on its port
    out = tmp_path / "audit.jsonl"
    for url, shown in (
        (server.url, server.url),
        (
            f"redis://auditor:s3cret@127.0.0.1:{server.port}/0",
            f"redis://auditor:***@127.0.0.1:{server.port}/0",
        ),
    ):
        run = _cli("audit", "--redis", url, "--out", str(out))
        assert run.returncode == 1
        [line] = run.stderr.splitlines()
        assert line.startswith(f"interpose audit: cannot reach Redis at {shown}: ")
        assert "s3cret" not in line
        assert "appended" not in run.stderr
        assert not out.exists()  # no empty, partial file


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("tail", "--redis", "http://127.0.0.1:6379"), "not a Redis URL"),
        (("tail", "--redis", "redis://127.0.0.1:port/0"), "not a valid Redis URL"),
        (("tail", "--redis", "redis://127.0.0.1:1/0", "--events", "nope"), "--events: unknown"),
        (("tail", "--redis", "redis://127.0.0.1:1/0", "--stream", ""), "stream must be"),
        (
            ("audit", "--redis", "redis://127.0.0.1:1/0", "--out", "{tmp}/no/such/dir/a.jsonl"),
            "--out: the directory",
        ),
        (("audit", "--redis", "redis://127.0.0.1:1/0", "--out", "{tmp}"), "is a directory"),
        (("audit", "--redis", "ftp://x", "--out", "{tmp}/a.jsonl"), "not a Redis URL"),
    ],
)
def test_bad_arguments_of_tail_and_audit_are_one_line_and_exit_2(
    tmp_path: Path, argv: tuple[str, ...], message: str
) -> None:
    run = _cli(*(arg.replace("{tmp}", str(tmp_path)) for arg in argv))
    assert run.returncode == 2
    [line] = run.stderr.splitlines()
    assert line.startswith(f"interpose {argv[0]}: ")
    assert message in line
    assert "Traceback" not in run.stdout + run.stderr
    assert run.stdout == ""
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["tail", "audit"])
def test_tail_and_audit_help_describe_them_and_their_exit_codes(command: str) -> None:
    run = _cli(command, "--help")
    assert run.returncode == 0
    _usage, description = run.stdout.split("\n\n")[:2]
    assert description.startswith(("Print what a fleet", "Append every event"))
    assert "exit codes:\n  0  caught up" in run.stdout
    assert "\n  1  Redis cannot be reached" in run.stdout
    assert "\n  2  a bad argument" in run.stdout


async def test_audit_writes_the_audit_log_format_and_resumes(
    redis_server: RedisServer, stream: str, tmp_path: Path
) -> None:
    from interpose.bus.events import decode_event

    out = tmp_path / "audit.jsonl"
    args = ("audit", "--redis", redis_server.url, "--stream", stream, "--out", str(out))
    await _publish_sample(redis_server.url, stream)
    first = await anyio.to_thread.run_sync(lambda: _cli(*args))
    assert first.returncode == 0, first.stderr
    assert "12 event(s) appended" in first.stderr
    events = [decode_event(line) for line in out.read_bytes().splitlines()]
    assert [e.kind for e in events[:4]] == [
        "turn_started",
        "tool_exec_start",
        "tool_exec_end",
        "turn_ended",
    ]
    await _publish_sample(redis_server.url, stream)
    second = await anyio.to_thread.run_sync(lambda: _cli(*args))
    assert "12 event(s) appended" in second.stderr  # only the new ones
    assert len(out.read_bytes().splitlines()) == 24


async def test_the_config_file_attaches_a_publisher(
    redis_server: RedisServer, stream: str, tmp_path: Path
) -> None:
    from interpose.config import ConfigFileError, build_pipeline, parse_config

    config = tmp_path / "interpose.toml"
    config.write_text(
        f'[observers.redis]\nurl = "{redis_server.url}"\nstream = "{stream}"\n'
        'events = ["tool_exec_end"]\noverflow = "drop_oldest"\n'
    )
    check = await anyio.to_thread.run_sync(_cli, "check", str(config))
    assert check.returncode == 0, check.stderr
    assert f"redis {stream}  tool_exec_end (overflow=drop_oldest)" in check.stdout
    pipe = build_pipeline(parse_config(config), base_dir=tmp_path)
    async with pipe:
        await pipe.call_tool("read", {"path": "README.md"}, call=_echo)
    async with Redis.from_url(redis_server.url) as client:
        [(_, fields)] = await _xrange(client, stream)
    assert msgspec.json.decode(fields[b"e"])["kind"] == "tool_exec_end"
    config.write_text('[observers.redis]\nurl = "localhost:6379"\n')
    with pytest.raises(ConfigFileError, match=r"observers\.redis\.url: not a Redis URL"):
        build_pipeline(parse_config(config), base_dir=tmp_path)


async def test_an_error_reply_is_retried_never_raised_into_the_agent(
    redis_server: RedisServer, stream: str
) -> None:
    async with Redis.from_url(redis_server.url) as client:
        await client.set(stream, "not a stream")  # WRONGTYPE for every XADD
    pipe = Pipeline(builtins=False)
    publisher = RedisStreamPublisher(
        redis_server.url,
        stream=stream,
        overflow="drop_oldest",
        queue=4,
        backoff=(0.01, 0.02),
        close_timeout=0.1,
    )
    publisher.attach(pipe, events={"tool_exec_end"})
    failures: list[Event] = []
    pipe.subscribe(failures.append, events={"interceptor_failed"})
    with anyio.fail_after(20):
        async with pipe:
            for i in range(20):
                result = await pipe.call_tool("read", {}, call=_echo, call_id=f"c{i}")
                assert result.status == "ok"
    assert publisher.stats.published == 0
    assert publisher.stats.errors >= 1
    assert publisher.stats.dropped + publisher.stats.lost == 20
    failure, lost = failures
    assert isinstance(failure, InterceptorFailed)
    assert failure.error_type == "ResponseError"
    assert "WRONGTYPE" in failure.error
    assert isinstance(lost, InterceptorFailed)
    assert lost.error_type == "EventsLost"


async def test_a_consumer_creates_its_group_again_when_it_is_gone(
    redis_server: RedisServer, stream: str
) -> None:
    got: list[str] = []
    second_in = anyio.Event()
    consumer = RedisStreamConsumer(redis_server.url, stream, "g", "c", block=0.05)

    def record(event: Event) -> None:
        got.append(getattr(event, "tool_call_id", ""))
        if len(got) == 2:
            second_in.set()

    consumer.subscribe(record)
    async with Redis.from_url(redis_server.url) as client:
        first = ToolExecEnd(ts=time.time_ns(), tool_call_id="before")
        await client.xadd(stream, _fields(first, b"p", 1))
        with anyio.fail_after(20):
            async with consumer:
                while not got:  # noqa: ASYNC110 - the consumer's progress, bounded above
                    await anyio.sleep(0.01)
                # what a Redis restart without persistence does to a group
                await client.xgroup_destroy(stream, "g")
                await client.delete(stream)
                second = ToolExecEnd(ts=time.time_ns(), tool_call_id="after")
                await client.xadd(stream, _fields(second, b"p", 2))
                await second_in.wait()
    assert got == ["before", "after"]


# -- exit bounds and drop accounting ----------------------------------------------------

CLOSE = 1.0  # s: the close_timeout of the exit tests
MARGIN = 1.5  # s: what the exit may take beyond it (a loaded 2-core machine)


@pytest.mark.parametrize("raises", [False, True], ids=["normal exit", "exit by exception"])
@pytest.mark.parametrize("down", ["killed", "frozen", "never listened"])
async def test_exit_with_redis_down_and_the_queue_full_ends_within_close_timeout(
    make_redis: Callable[..., RedisServer],
    stream: str,
    caplog: pytest.LogCaptureFixture,
    down: str,
    raises: bool,
) -> None:
    server = make_redis() if down != "never listened" else None
    url = server.url if server is not None else f"redis://127.0.0.1:{free_port()}/0"
    pipe = Pipeline(builtins=False)
    publisher = RedisStreamPublisher(
        url, stream=stream, queue=100, backoff=(0.01, 0.05), close_timeout=CLOSE
    )
    sub = publisher.attach(pipe, events={"tool_exec_end"})
    reports: list[Event] = []
    pipe.subscribe(reports.append, events={"interceptor_failed"})
    calls = 150  # more than the queue holds: one put waits for room, the rest in the bus

    async def agent() -> None:
        async with pipe:
            if server is not None:
                await pipe.call_tool("read", {}, call=_echo, call_id="c-first")
                while publisher.stats.published < 1:  # noqa: ASYNC110 - bounded below
                    await anyio.sleep(0.01)
                assert server.process is not None
                if down == "killed":
                    server.kill()
                else:
                    server.process.send_signal(signal.SIGSTOP)
            for i in range(calls):
                await pipe.call_tool("read", {}, call=_echo, call_id=f"c{i}")
            while publisher.stats.queued < 100:  # noqa: ASYNC110 - bounded below
                await anyio.sleep(0.01)
            # the exit: bounded by close_timeout, whatever Redis does
            scope.deadline = anyio.current_time() + CLOSE + MARGIN
            if raises:
                raise RuntimeError("the agent failed")

    with anyio.fail_after(30) as scope:
        if raises:
            with pytest.raises(RuntimeError, match="the agent failed"):
                await agent()
        else:
            await agent()
    stats = publisher.stats
    sent = 1 if server is not None else 0
    assert (stats.published, stats.dropped, stats.queued) == (sent, 0, 0)
    assert stats.lost == calls  # the queue, the put that waited, the bus buffer's rest
    assert sub.stats.aborted == 0  # the drain ended on its own, nothing cut off
    assert sub.stats.published == calls + sent
    lost = [r for r in reports if isinstance(r, InterceptorFailed) and r.policy == "drop"]
    assert [(r.error_type, r.error.split(" event(s)")[0]) for r in lost] == [
        ("EventsLost", str(calls))
    ]
    assert f"{calls} event(s) not sent to Redis within close_timeout=1s" in caplog.text


async def test_a_cancelled_exit_with_redis_down_ends_within_its_bounds_and_counts_all(
    stream: str, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    pipe = Pipeline(builtins=False, drain_grace=0.2)
    publisher = RedisStreamPublisher(
        url, stream=stream, queue=10, backoff=(0.01, 0.05), close_timeout=CLOSE
    )
    publisher.attach(pipe, events={"tool_exec_end"}, buffer=100)
    calls = 50
    with anyio.fail_after(20):
        with anyio.CancelScope() as cancel:
            async with pipe:
                for i in range(calls):
                    await pipe.call_tool("read", {}, call=_echo, call_id=f"c{i}")
                while publisher.stats.queued < 10:  # noqa: ASYNC110 - bounded above
                    await anyio.sleep(0.01)
                cancel.cancel()  # a deadline around the pipeline: the exit is cancelled
                started = anyio.current_time()
                await anyio.sleep(30)
        # the drain gives up after drain_grace, the publisher at its close deadline
        assert anyio.current_time() - started < CLOSE + MARGIN
    stats = publisher.stats
    assert (stats.published, stats.dropped, stats.queued) == (0, 0, 0)
    assert stats.lost == calls
    assert f"{calls} event(s) not sent to Redis within close_timeout=1s" in caplog.text


@pytest.mark.parametrize("overflow", ["drop_newest", "drop_oldest"])
async def test_every_drop_of_a_sync_burst_is_counted_in_the_publisher_stats(
    redis_server: RedisServer, stream: str, overflow: Overflow
) -> None:
    pipe = Pipeline(builtins=False)
    publisher = RedisStreamPublisher(redis_server.url, stream=stream, overflow=overflow)
    sub = publisher.attach(pipe, events={"tool_exec_end"})
    calls = 20_000
    with anyio.fail_after(60):
        async with pipe:
            # the agent never waits for the bus: the subscription's buffer (1024)
            # overflows, and its policy drops the rest
            for i in range(calls):
                await pipe.call_tool("read", {}, call=_echo, call_id=f"c{i}")
    stats = publisher.stats
    async with Redis.from_url(redis_server.url) as client:
        in_stream = await client.xlen(stream)
    assert in_stream == stats.published
    assert sub.stats.dropped > 0
    assert stats.dropped == sub.stats.dropped  # the bus's drops are the publisher's
    assert (stats.lost, stats.queued) == (0, 0)
    assert stats.published + stats.dropped == calls


async def _publish_calls(url: str, stream: str, calls: int, maxlen: int) -> None:
    pipe = Pipeline(builtins=False)
    publisher = RedisStreamPublisher(url, stream=stream, maxlen=maxlen, batch=50)
    publisher.attach(pipe, events={"tool_exec_end"})
    async with pipe:
        for i in range(calls):
            await pipe.call_tool("read", {}, call=_echo, call_id=f"c{i}")
            if i % 50 == 49:  # let the writer send batch by batch, each one trimming
                await anyio.lowlevel.checkpoint()
    assert publisher.stats.published == calls


async def test_entries_trimmed_before_a_slow_group_read_them_are_counted(
    redis_server: RedisServer, stream: str, caplog: pytest.LogCaptureFixture
) -> None:
    from interpose.bus.redis.consumer import trimmed_unread

    got: list[Event] = []
    consumer = RedisStreamConsumer(redis_server.url, stream, "slow", "s1")
    consumer.subscribe(got.append)
    # a group that reads nothing before the trimming (made on the empty stream)
    late = RedisStreamConsumer(redis_server.url, stream, "late", "l1")
    with anyio.fail_after(60):
        await late.run(until_caught_up=True)
        await _publish_calls(redis_server.url, stream, 10, maxlen=100)
        await consumer.run(until_caught_up=True)
        assert (len(got), consumer.stats.trimmed) == (10, 0)
        # the group stops reading; the fleet publishes ten times MAXLEN meanwhile
        await _publish_calls(redis_server.url, stream, 1000, maxlen=100)
        async with Redis.from_url(redis_server.url) as client:
            left = await client.xlen(stream)
            [group] = [g for g in await client.xinfo_groups(stream) if g["name"] == b"slow"]
            info = await client.xinfo_stream(stream)
        assert left < 1000
        # its last-delivered id is older than the first entry: every entry left is
        # unread, and all the others it did not read were trimmed
        assert trimmed_unread(dict(group), dict(info)) == 1000 - left
        assert group["lag"] == 1000  # what Redis says: the trimmed ones included
        await consumer.run(until_caught_up=True)
    assert len(got) == 10 + left
    assert consumer.stats.delivered + consumer.stats.trimmed == 1010
    assert consumer.stats.trimmed == 1000 - left
    assert (consumer.lag, consumer.stats.lost) == (0, 0)
    assert "were trimmed before the group read them (maxlen below" in caplog.text
    assert f"lost, {1000 - left} in all" in caplog.text
    # the late group is read to the end by someone else before its consumer looks:
    # its last-delivered id is the last one, all it did not read was trimmed
    async with Redis.from_url(redis_server.url) as client:
        read = read_entries(await client.xreadgroup("late", "other", {stream: ">"}, count=5000))
        await client.xack(stream, "late", *(entry_id for entry_id, _ in read))
    assert len(read) == left
    with anyio.fail_after(60):
        await late.run(until_caught_up=True)
    assert late.stats.trimmed == 1010 - left
    assert late.lag == 0
