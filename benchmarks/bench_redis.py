"""The fleet bus: events/s a publisher writes to a Redis Stream, and end-to-end latency
at 10k events/s, against ``redis-benchmark``'s XADD rate on the same server, in one run.

The benchmark starts its own ``redis-server`` (no persistence, a free loopback port, a
temporary directory; killed at the end) and measures:

- the reference, ``redis-benchmark`` sending the XADD the publisher sends (the same
  key, ``MAXLEN ~ 1000000``, the same three fields with a payload of the size of an
  encoded ``tool_exec_end`` event): one connection pipelining 512 requests (``-c 1
  -P 512``, the publisher's batch), and one connection without pipelining (``-c 1``,
  one round trip per XADD: its p50 is the reference of the latency).  Debian's
  redis-benchmark 7.0 has no ``-t xadd`` test (it prints nothing), so the command is
  given in full, which is the same XADD.
- publisher, direct: ``await publisher(event)`` for N events, then until the writer
  has sent them all: events/s.  Its ratio to the pipelined XADD rate is what the
  publisher's Python side (encoding, queueing, redis-py's pipeline) leaves of Redis's.
- publisher, through a pipeline: ``pipe.call_tool`` with the publisher attached (every
  event kind: 4 events per one-call turn), events/s written.
- the pipeline alone: the same calls with a no-op async observer in the publisher's
  place: the events/s a busy agent process produces.  Target: the direct publisher
  writes at least that many (publishing keeps up with the pipeline), the ratio of the
  two measured in the same round.
- 3 processes: three child processes publish N/2 events each, at once, through the
  publisher (each timed from its first event to its last one sent); events/s per
  process, the median of the three.
- end-to-end latency at 10k events/s: this process publishes ``tool_exec_end`` events
  at 10,000/s (10 every millisecond) for a while; a child process consumes them with a
  ``RedisStreamConsumer`` and records ``now - event.ts`` for each; p50 and p99, and
  the p50's ratio to one XADD round trip.

Throughputs are medians over ``--rounds`` (each round runs the reference and the
publisher cases back to back, ratios are per round, then the median); the machine is
shared, so only the ratios are meant to carry from one run to the next.

Run it with ``python benchmarks/bench_redis.py [--quick] [--json out.json]``.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import anyio
from harness import option_parser, print_header, run_settings

from interpose import Pipeline
from interpose.bus.events import ToolExecEnd, encode_event
from interpose.bus.redis import RedisStreamConsumer, RedisStreamPublisher

BATCH = 512
RATE = 10_000  # events/s of the latency case
TARGET_KEEPS_UP = 1.0  # publisher, direct: at least the rate the pipeline produces events
TARGET_P99_MS = 50.0  # end-to-end p99 at 10k events/s


@dataclass
class Row:
    label: str
    value: float
    unit: str
    ratio: float | None
    target: str
    result: str


def sample_event(i: int = 0) -> ToolExecEnd:
    return ToolExecEnd(
        ts=time.time_ns(),
        seq=i,
        turn_id="t-0123456789",
        agent_id="coder",
        session_key="s1",
        tool_name="exec",
        tool_call_id=f"call-{i}",
        status="ok",
        duration_ns=1_234_567,
        interceptors=("builtin:command-safety-guard",),
        interceptor_ns=(12_345,),
    )


# -- the server and the reference -------------------------------------------------------


class Server:
    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None or shutil.which("redis-benchmark") is None:
            raise SystemExit(
                "bench_redis needs redis-server and redis-benchmark (apt-get install "
                "redis-server; scripts/test.sh does it)"
            )
        self.dir = tempfile.TemporaryDirectory(prefix="bench-redis-")
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.process = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self.dir.name,
                "--logfile",
                str(Path(self.dir.name) / "redis.log"),
            ],
            stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.02)
        self.close()
        raise RuntimeError("redis-server did not start")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.dir.cleanup()


def redis_benchmark(server: Server, n: int, pipeline: int) -> dict[str, float]:
    """redis-benchmark sending the publisher's XADD ``n`` times on one connection."""
    payload = encode_event(sample_event())
    command = [
        "redis-benchmark",
        "-h",
        "127.0.0.1",
        "-p",
        str(server.port),
        "-n",
        str(n),
        "-c",
        "1",
        "-P",
        str(pipeline),
        "--csv",
        "XADD",
        "bench:reference",
        "MAXLEN",
        "~",
        "1000000",
        "*",
        "e",
        payload.decode(),
        "p",
        "host:12345:0123abcd",
        "n",
        "123456",
    ]
    run = subprocess.run(command, capture_output=True, text=True, timeout=300, check=True)
    header, row = (line for line in run.stdout.splitlines() if line.strip())
    names = next(csv.reader([header]))[1:]
    # the first cell is the command, quotes unescaped: the numbers are the last cells
    numbers = [cell.strip('"') for cell in row.rsplit(",", len(names))[1:]]
    values = dict(zip(names, numbers, strict=True))
    return {"rps": float(values["rps"]), "p50_ms": float(values["p50_latency_ms"])}


# -- the publisher cases ----------------------------------------------------------------


async def publish_direct(url: str, n: int, stream: str) -> float:
    """events/s: ``await publisher(event)`` n times, until all are sent."""
    events = [sample_event(i) for i in range(n)]
    publisher = RedisStreamPublisher(url, stream=stream, batch=BATCH)
    async with publisher:
        started = time.perf_counter()
        for event in events:
            await publisher(event)
        with anyio.fail_after(120):
            # the writer's own counter, polled (a wake-up per batch would be timed too)
            while publisher.stats.published < n:  # noqa: ASYNC110
                await anyio.sleep(0.0005)
        elapsed = time.perf_counter() - started
    return n / elapsed


async def publish_through_pipeline(url: str, calls: int, stream: str) -> float:
    """events/s written when ``pipe.call_tool`` publishes every kind (4 per call)."""
    pipe = Pipeline(builtins=False, tracing="off")
    publisher = RedisStreamPublisher(url, stream=stream, batch=BATCH)
    publisher.attach(pipe)

    def tool(args: dict[str, Any]) -> str:
        return "ok"

    async with pipe:
        started = time.perf_counter()
        for i in range(calls):
            await pipe.call_tool("exec", {"command": "ls"}, call=tool, call_id=f"c{i}")
    elapsed = time.perf_counter() - started  # the exit flushed the writer
    return publisher.stats.published / elapsed


async def pipeline_alone(calls: int) -> float:
    """events/s the same calls produce with a no-op async observer instead of the
    publisher: the rate the publisher has to keep up with."""
    pipe = Pipeline(builtins=False, tracing="off")
    seen = [0]

    async def noop(event: Any) -> None:
        seen[0] += 1

    pipe.subscribe(noop)

    def tool(args: dict[str, Any]) -> str:
        return "ok"

    async with pipe:
        started = time.perf_counter()
        for i in range(calls):
            await pipe.call_tool("exec", {"command": "ls"}, call=tool, call_id=f"c{i}")
    return seen[0] / (time.perf_counter() - started)


def child_publish(url: str, n: int, stream: str) -> None:
    rate = anyio.run(publish_direct, url, n, stream)
    print(json.dumps({"rate": rate}), flush=True)


def child_consume(url: str, stream: str, n: int) -> None:
    """Consume n events and print the latencies (ns) of each, as JSON."""
    latencies: list[int] = []
    consumer = RedisStreamConsumer(url, stream, "bench", "c", batch=BATCH, block=0.05)

    def observe(event: Any) -> None:
        latencies.append(time.time_ns() - event.ts)
        if len(latencies) >= n:
            consumer.stop()

    consumer.subscribe(observe)
    print("ready", flush=True)
    anyio.run(consumer.run)
    print(json.dumps(latencies), flush=True)


def wait_output(process: subprocess.Popen[str]) -> str:
    out, _ = process.communicate(timeout=300)
    if process.returncode:
        raise RuntimeError(f"a publisher child failed with {process.returncode}")
    return out


def child(kind: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, __file__, "--child", kind, *args],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


async def paced_latency(url: str, seconds: float) -> dict[str, float]:
    """Publish at RATE events/s for ``seconds``; a child consumer measures the latency."""
    n = int(RATE * seconds)
    stream = "bench:latency"
    consumer = child("consume", url, stream, str(n))
    try:
        assert consumer.stdout is not None
        assert consumer.stdout.readline().strip() == "ready"
        publisher = RedisStreamPublisher(url, stream=stream, batch=BATCH)
        per_tick = RATE // 1000
        async with publisher:
            started = time.perf_counter()
            for i in range(0, n, per_tick):
                # catch up with the schedule: 10 events per elapsed millisecond
                due = started + i / RATE
                delay = due - time.perf_counter()
                if delay > 0:
                    await anyio.sleep(delay)
                for j in range(i, min(i + per_tick, n)):
                    await publisher(sample_event(j))
            achieved = n / (time.perf_counter() - started)
        out, _ = await anyio.to_thread.run_sync(lambda: consumer.communicate(timeout=120))
    finally:
        if consumer.poll() is None:
            consumer.kill()
            consumer.communicate(timeout=10)
    latencies = sorted(json.loads(out.strip().splitlines()[-1]))
    return {
        "events": len(latencies),
        "rate": achieved,
        "p50_ms": latencies[len(latencies) // 2] / 1e6,
        "p99_ms": latencies[min(len(latencies) - 1, len(latencies) * 99 // 100)] / 1e6,
    }


async def bench(rounds: int, target_ms: float, quick: bool) -> dict[str, Any]:
    server = Server()
    try:
        n = 20_000 if quick else 100_000
        ref, ref_rtt, direct, piped, alone, ratios, keeps_up = [], [], [], [], [], [], []
        for r in range(rounds):
            reference = await anyio.to_thread.run_sync(redis_benchmark, server, n, BATCH)
            rtt = await anyio.to_thread.run_sync(redis_benchmark, server, n // 20, 1)
            rate = await publish_direct(server.url, n, f"bench:direct:{r}")
            ref.append(reference["rps"])
            ref_rtt.append(rtt["p50_ms"])
            direct.append(rate)
            ratios.append(rate / reference["rps"])
            piped.append(await publish_through_pipeline(server.url, n // 8, f"bench:pipe:{r}"))
            alone.append(await pipeline_alone(n // 8))
            keeps_up.append(rate / alone[-1])
        per_process = n // 2
        children = [
            child("publish", server.url, str(per_process), f"bench:three:{k}") for k in range(3)
        ]
        rates = []
        for process in children:
            out = await anyio.to_thread.run_sync(wait_output, process)
            rates.append(json.loads(out.strip().splitlines()[-1])["rate"])
        latency = await paced_latency(server.url, 1.0 if quick else max(2.0, target_ms / 100))
    finally:
        server.close()
    return {
        "reference_rps": statistics.median(ref),
        "reference_rtt_p50_ms": statistics.median(ref_rtt),
        "direct_rps": statistics.median(direct),
        "direct_vs_reference": statistics.median(ratios),
        "pipeline_rps": statistics.median(piped),
        "pipeline_alone_rps": statistics.median(alone),
        "direct_vs_pipeline_alone": statistics.median(keeps_up),
        "three_processes": {"per_process_rps": statistics.median(rates), "rates": rates},
        "latency": latency,
        "cases": {"direct": direct, "reference": ref, "pipeline": piped, "alone": alone},
    }


def rows_of(results: dict[str, Any]) -> list[Row]:
    ref = results["reference_rps"]
    latency = results["latency"]
    ratio = results["direct_vs_reference"]
    keeps_up = results["direct_vs_pipeline_alone"]
    three = results["three_processes"]
    rtt = results["reference_rtt_p50_ms"]
    return [
        Row("redis-benchmark XADD, -c 1 -P 512 (reference)", ref, "events/s", 1.0, "", ""),
        Row("redis-benchmark XADD, -c 1, p50 round trip", rtt, "ms", None, "info", ""),
        Row(
            "publisher, direct (await publisher(event))",
            results["direct_rps"],
            "events/s",
            ratio,
            "info",
            "",
        ),
        Row(
            "pipe.call_tool, no-op observer (events produced)",
            results["pipeline_alone_rps"],
            "events/s",
            results["pipeline_alone_rps"] / ref,
            "info",
            "",
        ),
        Row(
            "  publisher direct / events the pipeline produces",
            keeps_up,
            "x",
            None,
            f">= {TARGET_KEEPS_UP:g}x (keeps up)",
            "PASS" if keeps_up >= TARGET_KEEPS_UP else "MISS",
        ),
        Row(
            "publisher through pipe.call_tool (4 events/call)",
            results["pipeline_rps"],
            "events/s",
            results["pipeline_rps"] / ref,
            "info",
            "",
        ),
        Row(
            "3 processes at once, per process",
            three["per_process_rps"],
            "events/s",
            three["per_process_rps"] / ref,
            "info",
            "",
        ),
        Row(
            f"end to end at {latency['rate']:.0f} events/s, p50",
            latency["p50_ms"],
            "ms",
            latency["p50_ms"] / rtt if rtt else None,
            "info",
            "",
        ),
        Row(
            f"end to end at {latency['rate']:.0f} events/s, p99",
            latency["p99_ms"],
            "ms",
            latency["p99_ms"] / rtt if rtt else None,
            f"<= {TARGET_P99_MS:g} ms",
            "PASS" if latency["p99_ms"] <= TARGET_P99_MS else "MISS",
        ),
    ]


def render(rows: list[Row]) -> str:
    lines = [f"{'case':<52} {'value':>12} {'unit':<9} {'ratio':>7}  target", "-" * 100]
    for row in rows:
        ratio = "" if row.ratio is None else f"{row.ratio:.2f}x"
        value = f"{row.value:,.0f}" if row.unit == "events/s" else f"{row.value:.2f}"
        target = "" if row.target in ("", "info") else f"{row.target}  {row.result}"
        lines.append(f"{row.label:<52} {value:>12} {row.unit:<9} {ratio:>7}  {target}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = option_parser(__doc__)
    parser.add_argument("--child", nargs="+", help=argparse_suppress())
    opts = parser.parse_args(argv)
    if opts.child:
        kind, *args = opts.child
        if kind == "publish":
            child_publish(args[0], int(args[1]), args[2])
        else:
            child_consume(args[0], args[1], int(args[2]))
        return 0
    rounds, target_ms = run_settings(opts, 5, 300.0, quick_target_ms=100.0)
    quick = opts.quick or target_ms < 50
    info = print_header(
        "interpose bench: fleet bus on Redis Streams", quick, rounds, target_ms, "median"
    )
    started = time.perf_counter()
    results = anyio.run(bench, rounds, target_ms, quick)
    rows = rows_of(results)
    print(render(rows))
    print(f"\n(measured in {time.perf_counter() - started:.1f} s)")
    if opts.json:
        with open(opts.json, "w", encoding="utf-8") as f:
            payload = {"machine": info, "rounds": rounds, "target_ms": target_ms, **results}
            json.dump({**payload, "rows": [asdict(r) for r in rows]}, f, indent=2)
    return 0


def argparse_suppress() -> str:
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    sys.exit(main())
