"""Round trip of a process-hook call, against a raw pipe echo between two Python
processes, in one run.

What it measures (microseconds per call, on one asyncio event loop via anyio; both
sides of every pipe are Python processes on this machine, every child started in its
own session as ProcessHook starts its children):

- floor, raw echo over asyncio pipes: this process writes one line -- the exact
  ``hook.before_tool`` request a ProcessHook sends for the benchmarked call, 200-odd
  bytes -- to a child that writes every line back unchanged (``for line in
  sys.stdin.buffer: write, flush``), and waits for it to come back.  It uses the
  machinery ProcessHook uses on asyncio: pipes connected to asyncio transports, one
  ``transport.write`` per line, and a protocol that resolves a future when the line
  is complete.  No JSON work on either side.  This is the cheapest way an asyncio
  program can talk to a child over a pipe.
- raw echo over anyio streams (informational): the same over ``anyio.open_process``
  streams (``send``; ``BufferedByteReceiveStream.receive_until``), the machinery of
  the portable path (trio).
- raw echo, blocking (informational): ``os.write`` then ``os.read`` on blocking pipes,
  with no event loop at all -- the kernel's part of the round trip.
- raw JSON-RPC (informational): the floor's write and read, but to the hook child
  below, which decodes the request and encodes the answer: the floor plus the child's
  own JSON work, i.e. what any process hook costs before interpose does anything.
  Also with the same child written with the stdlib's ``json``.
- process hook: ``await pipe.call_tool("exec", args, call=tool)`` through
  ``Pipeline(builtins=False, tracing="off")`` with one ``ProcessHook`` on before_tool
  whose child answers ``{"args": <the args it got>}`` at once (msgspec, one flushed
  line per reply), no subscribers.  Target: at most 1.5x the floor.  The difference
  between this case and the raw JSON-RPC one is what interpose adds on the host side
  (the pipeline, encoding, the pending-call table, decoding).
- process hook, portable path (informational): the same call through a ProcessHook
  that uses anyio's process streams and a reader task, as it does under trio.
- 8 in flight (informational): 8 tasks of one anyio task group each make the same
  ``pipe.call_tool`` calls, back to back, through the same hook: time per call
  (elapsed over all calls: the inverse of throughput), calls per second, and the
  latency of single calls (median and 99th percentile, each call timed on its own, in
  a separate pass after the timed rounds).

Methodology (harness.py's, but every case runs inside one anyio event loop,
because the children and the entered pipeline live in it): every case is calibrated to
a call count whose run lasts about ``--target-ms``, warmed up, then each round runs
every case once in a shuffled order, with the garbage collector disabled during the
timed loop; a case's time per call is the median over rounds, and a ratio is the
median of the per-round ratios.  The children run for the whole benchmark, so process
start-up is not measured.

Run it with ``python benchmarks/bench_process_hook.py [--quick] [--json out.json]``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.abc
import msgspec
from anyio.streams.buffered import BufferedByteReceiveStream

# the house harness's case record and machine description (its timing loop is
# synchronous: these cases run inside one event loop, so they are timed below)
from harness import Case, Loop, child_bench_main, paired_ratio, run_once_async, time_rounds

from interpose import Pipeline
from interpose.middleware.process import ProcessHook

TOOL = "exec"
ARGS: dict[str, Any] = {"command": "ls -la", "cwd": "/tmp"}
IN_FLIGHT = 8
MAX_LINE = 1 << 20
TARGET = 1.5


# -- the children (this file run with --child) -------------------------------------------


def echo_child() -> None:
    """Write every line of stdin back unchanged."""
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        out.write(line)
        out.flush()


def hook_child() -> None:
    """A process hook that answers every before_tool with the args it got (msgspec)."""
    decode, encode = msgspec.json.decode, msgspec.json.encode
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        message = decode(line)
        if message["method"] == "hook.hello":
            result: Any = {"name": "bench", "protocol_version": 1}
        else:
            result = {"args": message["params"]["args"]}
        out.write(encode({"jsonrpc": "2.0", "id": message["id"], "result": result}) + b"\n")
        out.flush()


def json_hook_child() -> None:
    """The same hook, written with the standard library's json."""
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        message = json.loads(line)
        if message["method"] == "hook.hello":
            result: Any = {"name": "bench", "protocol_version": 1}
        else:
            result = {"args": message["params"]["args"]}
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        out.write(json.dumps(reply).encode() + b"\n")
        out.flush()


CHILDREN = {"echo": echo_child, "hook": hook_child, "json-hook": json_hook_child}


def child_command(kind: str) -> list[str]:
    return [sys.executable, __file__, "--child", kind]


# -- raw conversations with a child -------------------------------------------------------


class _Lines(asyncio.Protocol):
    """A child's stdout: resolves ``waiter`` with each complete line."""

    def __init__(self) -> None:
        self.buffer = b""
        self.waiter: asyncio.Future[bytes] | None = None

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer + data if self.buffer else data
        end = buffer.find(b"\n")
        if end < 0:
            self.buffer = buffer
            return
        self.buffer = buffer[end + 1 :]
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(buffer[:end])


class PipeChild:
    """A child on pipes connected to asyncio transports, as ProcessHook runs one."""

    def __init__(
        self, proc: anyio.abc.Process, writer: asyncio.WriteTransport, lines: _Lines
    ) -> None:
        self.proc = proc
        self.writer = writer
        self.lines = lines
        self.loop = asyncio.get_running_loop()

    @classmethod
    async def start(cls, kind: str) -> PipeChild:
        loop = asyncio.get_running_loop()
        child_in, to_child = os.pipe()
        from_child, child_out = os.pipe()
        proc = await anyio.open_process(
            child_command(kind), stdin=child_in, stdout=child_out, start_new_session=True
        )
        os.close(child_in)
        os.close(child_out)
        writer, _ = await loop.connect_write_pipe(
            asyncio.Protocol, os.fdopen(to_child, "wb", buffering=0)
        )
        _, lines = await loop.connect_read_pipe(_Lines, os.fdopen(from_child, "rb", buffering=0))
        return cls(proc, writer, lines)

    async def round_trip(self, line: bytes) -> bytes:
        waiter: asyncio.Future[bytes] = self.loop.create_future()
        self.lines.waiter = waiter
        self.writer.write(line)
        return await waiter

    async def aclose(self) -> None:
        self.writer.close()
        await self.proc.aclose()


class StreamChild:
    """A child on anyio's process streams, as ProcessHook's portable path runs one."""

    def __init__(self, proc: anyio.abc.Process) -> None:
        assert proc.stdin is not None
        assert proc.stdout is not None
        self.proc = proc
        self.send = proc.stdin.send
        self.stream = BufferedByteReceiveStream(proc.stdout)

    @classmethod
    async def start(cls, kind: str) -> StreamChild:
        return cls(await anyio.open_process(child_command(kind), start_new_session=True))

    async def round_trip(self, line: bytes) -> bytes:
        await self.send(line)
        return await self.stream.receive_until(b"\n", MAX_LINE)

    async def aclose(self) -> None:
        await self.proc.aclose()


class BlockingChild:
    """A child on blocking pipes, read and written with os.read/os.write (no loop)."""

    def __init__(self) -> None:
        self.popen = subprocess.Popen(
            child_command("echo"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        assert self.popen.stdin is not None
        assert self.popen.stdout is not None
        self.to_child = self.popen.stdin.fileno()
        self.from_child = self.popen.stdout.fileno()

    def round_trip(self, line: bytes) -> bytes:
        os.write(self.to_child, line)
        data = os.read(self.from_child, 65536)
        while not data.endswith(b"\n"):
            data += os.read(self.from_child, 65536)
        return data[:-1]

    def close(self) -> None:
        self.popen.stdin.close()  # type: ignore[union-attr]
        self.popen.stdout.close()  # type: ignore[union-attr]
        self.popen.wait(timeout=5)


def request_line() -> bytes:
    """The hook.before_tool line the ProcessHook writes for the benchmarked call."""
    params = {
        "name": TOOL,
        "args": ARGS,
        "call_id": "call-1000",
        "agent_id": "main",
        "session_key": "",
        "turn_id": "",
        "raw_name": TOOL,
    }
    message = {"jsonrpc": "2.0", "id": 1000, "method": "hook.before_tool", "params": params}
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


# -- the cases --------------------------------------------------------------------------


async def tool(args: dict[str, Any]) -> dict[str, Any]:
    return args


def raw_case(child: PipeChild | StreamChild, line: bytes) -> Loop:
    async def loop(n: int) -> int:
        round_trip = child.round_trip
        start = time.perf_counter_ns()
        for _ in range(n):
            await round_trip(line)
        return time.perf_counter_ns() - start

    return loop


def blocking_case(child: BlockingChild, line: bytes) -> Loop:
    async def loop(n: int) -> int:
        round_trip = child.round_trip
        start = time.perf_counter_ns()
        for _ in range(n):
            round_trip(line)
        return time.perf_counter_ns() - start

    return loop


def hook_case(pipe: Pipeline) -> Loop:
    async def loop(n: int) -> int:
        call_tool = pipe.call_tool
        args = ARGS
        start = time.perf_counter_ns()
        for _ in range(n):
            await call_tool(TOOL, args, call=tool)
        return time.perf_counter_ns() - start

    return loop


def concurrent_case(pipe: Pipeline, tasks: int) -> Loop:
    async def caller(calls: int) -> None:
        call_tool = pipe.call_tool
        args = ARGS
        for _ in range(calls):
            await call_tool(TOOL, args, call=tool)

    async def loop(n: int) -> int:
        per_task = max(1, n // tasks)
        start = time.perf_counter_ns()
        async with anyio.create_task_group() as tg:
            for _ in range(tasks):
                tg.start_soon(caller, per_task)
        # per call: the time over all calls actually made
        return (time.perf_counter_ns() - start) * n // (per_task * tasks)

    return loop


async def latencies(pipe: Pipeline, tasks: int, calls: int) -> list[int]:
    """Each call timed on its own, with ``tasks`` callers in flight."""
    found: list[int] = []

    async def caller() -> None:
        call_tool = pipe.call_tool
        for _ in range(calls):
            start = time.perf_counter_ns()
            await call_tool(TOOL, ARGS, call=tool)
            found.append(time.perf_counter_ns() - start)

    async with anyio.create_task_group() as tg:
        for _ in range(tasks):
            tg.start_soon(caller)
    return found


# -- the harness ------------------------------------------------------------------------


async def calibrate(case: Case, target_ns: int) -> int:
    n = 8
    while True:
        elapsed = await run_once_async(case.loop, n)
        if elapsed >= target_ns / 4 or n >= 1 << 20:
            return max(IN_FLIGHT, int(n * target_ns / max(elapsed, 1)))
        n *= 4


async def measure(cases: list[Case], rounds: int, target_ms: float) -> None:
    target_ns = int(target_ms * 1e6)
    for case in cases:
        case.n = await calibrate(case, target_ns)
    for case in cases:
        await run_once_async(case.loop, case.n)
    await time_rounds(cases, rounds)


# -- main -------------------------------------------------------------------------------


def process_hook(name: str) -> tuple[Pipeline, ProcessHook]:
    pipe = Pipeline(builtins=False, tracing="off")
    hook = ProcessHook(name, child_command("hook"), timeout=30.0)
    hook.install(pipe)
    return pipe, hook


@contextlib.contextmanager
def portable_path() -> Iterator[None]:
    """Process hooks started meanwhile use anyio's streams and a reader task (the path
    they take under trio) although this runs on asyncio."""
    # (imported here: the children run this file too, and need nothing of interpose's)
    import interpose.external.process.child as process_child

    process_child.ASYNCIO_PIPES = False
    try:
        yield
    finally:
        process_child.ASYNCIO_PIPES = True


async def check_call(pipe: Pipeline, hook: ProcessHook) -> None:
    result = await pipe.call_tool(TOOL, ARGS, call=tool)
    if (result.status, result.output) != ("ok", ARGS) or hook.stats.failed:
        raise RuntimeError(f"process hook {hook.name!r}: the call gave {result!r}")


async def bench(rounds: int, target_ms: float) -> dict[str, Any]:
    """Start the children, check what they answer, time every case.

    Raises:
        RuntimeError: a child or a hook does not answer as expected.
    """
    line = request_line()
    echo = await PipeChild.start("echo")
    stream_echo = await StreamChild.start("echo")
    blocking = BlockingChild()
    rpc = await PipeChild.start("hook")
    json_rpc = await PipeChild.start("json-hook")
    pipe, hook = process_hook("bench")
    portable_pipe, portable = process_hook("portable")
    try:
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(pipe)
            with portable_path():
                await stack.enter_async_context(portable_pipe)
            for child in (echo, stream_echo):
                if await child.round_trip(line) != line[:-1]:
                    raise RuntimeError("the echo child did not echo the line")
            if blocking.round_trip(line) != line[:-1]:
                raise RuntimeError("the blocking echo child did not echo the line")
            for child in (rpc, json_rpc):
                answer = json.loads(await child.round_trip(line))
                if answer["result"] != {"args": ARGS}:
                    raise RuntimeError(f"the hook child answered {answer!r}")
            await check_call(pipe, hook)
            await check_call(portable_pipe, portable)
            cases = [
                Case("echo", "raw echo, asyncio pipes (floor)", raw_case(echo, line)),
                Case("streams", "raw echo, anyio streams", raw_case(stream_echo, line)),
                Case("blocking", "raw echo, blocking, no loop", blocking_case(blocking, line)),
                Case("rpc", "raw JSON-RPC to the hook child", raw_case(rpc, line)),
                Case("json_rpc", "  the same, child using json", raw_case(json_rpc, line)),
                Case("hook", "process hook: pipe.call_tool", hook_case(pipe)),
                Case("portable", "  portable path (anyio streams)", hook_case(portable_pipe)),
                Case("hook8", f"process hook, {IN_FLIGHT} in flight", concurrent_case(pipe, 8)),
            ]
            await measure(cases, rounds, target_ms)
            lat = await latencies(pipe, IN_FLIGHT, max(50, cases[-1].n // IN_FLIGHT))
            for h in (hook, portable):
                if h.stats.failed or h.stats.restarts:
                    raise RuntimeError(f"hook {h.name!r} failed while measured: {h.stats}")
    finally:
        for child in (echo, stream_echo, rpc, json_rpc):
            await child.aclose()
        blocking.close()
    t = {c.key: c for c in cases}
    lat.sort()
    return {
        "cases": {c.key: {"label": c.label, "n": c.n, "ns_per_call": c.median} for c in cases},
        "ratios": {c.key: paired_ratio(c, t["echo"]) for c in cases},
        "hook_vs_echo": paired_ratio(t["hook"], t["echo"]),
        "host_side_ns": statistics.median(
            h - r for h, r in zip(t["hook"].samples, t["rpc"].samples, strict=True)
        ),
        "in_flight_speedup": paired_ratio(t["hook"], t["hook8"]),
        "latency_ns": {
            "p50": lat[len(lat) // 2],
            "p99": lat[min(len(lat) - 1, len(lat) * 99 // 100)],
            "calls": len(lat),
        },
    }


def render(results: dict[str, Any]) -> str:
    cases = results["cases"]
    ratios = results["ratios"]
    ratio = results["hook_vs_echo"]
    rows = [
        f"{'case':<40} {'us/call':>8} {'calls/s':>9} {'vs floor':>9}",
        "-" * 69,
    ]
    for key, case in cases.items():
        ns = case["ns_per_call"]
        rows.append(f"{case['label']:<40} {ns / 1e3:8.1f} {1e9 / ns:9.0f} {ratios[key]:8.2f}x")
    lat = results["latency_ns"]
    rows += [
        "",
        f"process hook vs the floor (paired): {ratio:.2f}x   target <= {TARGET}x   "
        f"{'PASS' if ratio <= TARGET else 'MISS'}",
        f"raw JSON-RPC vs the floor (the child's JSON work): {ratios['rpc']:.2f}x",
        f"host side, process hook minus raw JSON-RPC: {results['host_side_ns'] / 1e3:.1f} us",
        f"{IN_FLIGHT} in flight: {results['in_flight_speedup']:.2f}x the calls per second of one "
        f"caller; latency p50 {lat['p50'] / 1e3:.1f} us, p99 {lat['p99'] / 1e3:.1f} us "
        f"({lat['calls']} calls)",
    ]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the benchmark (or be one of its children), print the table.

    Raises:
        RuntimeError: a child or the hook does not answer as expected.
        OSError: the JSON file cannot be written.
    """
    return child_bench_main(
        __doc__,
        argv,
        CHILDREN,
        "interpose bench: process-hook round trip",
        bench,
        render,
        rounds=31,
        target_ms=100.0,
        quick_target_ms=20.0,
    )


if __name__ == "__main__":
    sys.exit(main())
