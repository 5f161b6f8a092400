"""Round trip of a process-hook call, against a raw pipe echo between two Python
processes, in one run.

What it measures (microseconds per call, on one asyncio event loop via anyio; both
sides of every pipe are Python processes on this machine):

- floor, raw echo: this process writes one line -- the exact ``hook.before_tool``
  request a ProcessHook sends for the benchmarked call, 200-odd bytes -- to a child
  that writes every line back unchanged (``for line in sys.stdin.buffer: write,
  flush``), and reads the line back.  It uses the machinery ProcessHook uses:
  ``anyio.open_process`` streams, ``send`` to write, and
  ``BufferedByteReceiveStream.receive_until(b"\\n", max_bytes)`` to read; no JSON
  work on either side.
- raw JSON-RPC (informational): the same write and read, but to the hook child below,
  which parses the request and answers it: the floor plus the child's own JSON work,
  i.e. what any process hook costs before interpose does anything.
- process hook: ``await pipe.call_tool("exec", args, call=tool)`` through
  ``Pipeline(builtins=False, tracing="off")`` with one ``ProcessHook`` on before_tool
  whose child answers ``{"args": <the args it got>}`` at once (stdlib ``json``, one
  flushed line per reply), no subscribers.  Target: at most 1.5x the raw echo.  The
  difference between this case and the raw JSON-RPC one is what interpose adds on the
  host side (encoding, the pending-call table, the reader task, decoding, the pipeline).
- 8 in flight (informational): 8 tasks of one anyio task group each make the same
  ``pipe.call_tool`` calls, back to back, through the same hook: time per call
  (elapsed over all calls: the inverse of throughput), calls per second, and the
  latency of single calls (median and 99th percentile, each call timed on its own, in
  a separate pass after the timed rounds).

Methodology: every case is calibrated to a call count whose run lasts about
``--target-ms``, warmed up, then each round runs every case once in a shuffled order,
with the garbage collector disabled during the timed loop; a case's time per call is
the median over rounds, and the ratio is the median of the per-round ratios.  The
children run for the whole benchmark, so process start-up is not measured.

Run it with ``python benchmarks/bench_process_hook.py [--quick] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream
from bench_tool_call import machine

from interpose import Pipeline
from interpose.middleware.process import ProcessHook

TOOL = "exec"
ARGS: dict[str, Any] = {"command": "ls -la", "cwd": "/tmp"}
IN_FLIGHT = 8
MAX_LINE = 1 << 20
Loop = Callable[[int], Awaitable[int]]


# -- the children (this file run with --child) -------------------------------------------


def echo_child() -> None:
    """Write every line of stdin back unchanged."""
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        out.write(line)
        out.flush()


def hook_child() -> None:
    """A process hook that answers every before_tool with the args it got."""
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


def child_command(kind: str) -> list[str]:
    return [sys.executable, __file__, "--child", kind]


# -- the cases --------------------------------------------------------------------------


async def tool(args: dict[str, Any]) -> dict[str, Any]:
    return args


class Pipe:
    """A raw line-per-message conversation with a child, as ProcessHook holds one."""

    def __init__(self, proc: anyio.abc.Process) -> None:
        assert proc.stdin is not None
        assert proc.stdout is not None
        self.proc = proc
        self.send = proc.stdin.send
        self.stream = BufferedByteReceiveStream(proc.stdout)

    async def round_trip(self, line: bytes) -> bytes:
        await self.send(line)
        return await self.stream.receive_until(b"\n", MAX_LINE)

    async def aclose(self) -> None:
        await self.proc.aclose()


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


def raw_case(pipe: Pipe, line: bytes) -> Loop:
    async def loop(n: int) -> int:
        round_trip = pipe.round_trip
        start = time.perf_counter_ns()
        for _ in range(n):
            await round_trip(line)
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


@dataclass
class Case:
    key: str
    label: str
    loop: Loop
    n: int = 0
    samples: list[float] = field(default_factory=list)  # ns per call, one per round

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


async def run_once(case: Case, n: int) -> int:
    gc.collect()
    gc.disable()
    try:
        return await case.loop(n)
    finally:
        gc.enable()


async def calibrate(case: Case, target_ns: int) -> int:
    n = 8
    while True:
        elapsed = await run_once(case, n)
        if elapsed >= target_ns / 4 or n >= 1 << 20:
            return max(IN_FLIGHT, int(n * target_ns / max(elapsed, 1)))
        n *= 4


async def measure(cases: list[Case], rounds: int, target_ms: float) -> None:
    target_ns = int(target_ms * 1e6)
    for case in cases:
        case.n = await calibrate(case, target_ns)
    for case in cases:
        await run_once(case, case.n)
    order = list(cases)
    rng = random.Random(0)
    for _ in range(rounds):
        rng.shuffle(order)
        for case in order:
            case.samples.append(await run_once(case, case.n) / case.n)


def paired_ratio(a: Case, b: Case) -> float:
    """The median over rounds of a's time over b's in the same round."""
    return statistics.median(x / y for x, y in zip(a.samples, b.samples, strict=True))


# -- main -------------------------------------------------------------------------------


async def bench(rounds: int, target_ms: float) -> dict[str, Any]:
    """Start the children, check what they answer, time every case.

    Raises:
        RuntimeError: a child or the hook does not answer as expected.
    """
    line = request_line()
    echo = Pipe(await anyio.open_process(child_command("echo")))
    rpc = Pipe(await anyio.open_process(child_command("hook")))
    pipe = Pipeline(builtins=False, tracing="off")
    hook = ProcessHook("bench", child_command("hook"), timeout=30.0)
    hook.install(pipe)
    try:
        async with pipe:
            if await echo.round_trip(line) != line.rstrip(b"\n"):
                raise RuntimeError("the echo child did not echo the line")
            answer = json.loads(await rpc.round_trip(line))
            if answer["result"] != {"args": ARGS}:
                raise RuntimeError(f"the hook child answered {answer!r}")
            result = await pipe.call_tool(TOOL, ARGS, call=tool)
            if (result.status, result.output) != ("ok", ARGS) or hook.stats.failed:
                raise RuntimeError(f"the process hook call gave {result!r}")
            cases = [
                Case("echo", "raw echo (floor)", raw_case(echo, line)),
                Case("rpc", "raw JSON-RPC to the hook child", raw_case(rpc, line)),
                Case("hook", "process hook: pipe.call_tool", hook_case(pipe)),
                Case("hook8", f"process hook, {IN_FLIGHT} in flight", concurrent_case(pipe, 8)),
            ]
            await measure(cases, rounds, target_ms)
            lat = await latencies(pipe, IN_FLIGHT, max(50, cases[3].n // IN_FLIGHT))
            if hook.stats.failed or hook.stats.restarts:
                raise RuntimeError(f"the hook failed while measured: {hook.stats}")
    finally:
        await echo.aclose()
        await rpc.aclose()
    t = {c.key: c for c in cases}
    lat.sort()
    return {
        "cases": {c.key: {"label": c.label, "n": c.n, "ns_per_call": c.median} for c in cases},
        "hook_vs_echo": paired_ratio(t["hook"], t["echo"]),
        "rpc_vs_echo": paired_ratio(t["rpc"], t["echo"]),
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
    echo = cases["echo"]["ns_per_call"]
    ratio = results["hook_vs_echo"]
    rows = [
        f"{'case':<40} {'us/call':>8} {'calls/s':>9} {'vs echo':>8}",
        "-" * 68,
    ]
    for key in ("echo", "rpc", "hook", "hook8"):
        ns = cases[key]["ns_per_call"]
        rows.append(f"{cases[key]['label']:<40} {ns / 1e3:8.1f} {1e9 / ns:9.0f} {ns / echo:7.2f}x")
    lat = results["latency_ns"]
    rows += [
        "",
        f"process hook vs raw echo (paired): {ratio:.2f}x   target <= 1.5x   "
        f"{'PASS' if ratio <= 1.5 else 'MISS'}",
        f"raw JSON-RPC vs raw echo (the child's JSON work): {results['rpc_vs_echo']:.2f}x",
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="few short rounds (smoke test)")
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds per case")
    parser.add_argument("--target-ms", type=float, default=None, help="length of one timed run")
    parser.add_argument("--json", metavar="PATH", default=None, help="write results as JSON")
    parser.add_argument("--child", choices=["echo", "hook"], help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.child == "echo":
        echo_child()
        return 0
    if opts.child == "hook":
        hook_child()
        return 0
    rounds = opts.rounds or (5 if opts.quick else 31)
    target_ms = opts.target_ms or (20.0 if opts.quick else 100.0)
    info = machine()
    print(f"interpose bench: process-hook round trip ({'quick' if opts.quick else 'full'} run)")
    print(
        f"Python {info['python']} ({info['implementation']}) on {info['platform']}; "
        f"processor: {info['processor']}; {info['cpu_count']} CPUs; "
        f"interpose {info['interpose']} at {info['revision']}"
    )
    print(f"{rounds} rounds x ~{target_ms:g} ms per case; median per call\n")
    started = time.perf_counter()
    results = anyio.run(bench, rounds, target_ms)
    print(render(results))
    print(f"\n(measured in {time.perf_counter() - started:.1f} s)")
    if opts.json:
        with open(opts.json, "w", encoding="utf-8") as f:
            json.dump({"machine": info, "rounds": rounds, "target_ms": target_ms, **results}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
