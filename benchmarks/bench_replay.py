"""Replay throughput: recorded tool calls per second through the default guards.

What it measures (µs per recorded call; every case is an ``async def loop(n)`` run on one
asyncio event loop and timed inside the coroutine, like ``bench_tool_call.py``), on a
recorded session of eight calls (``git status``, ``ls -la src``, ``git diff --stat``, a
read of ``README.md``, a read of ``~/.ssh/id_rsa`` that the security audit refuses, a
write, a ``web_fetch`` and a ``pytest -q``), cycled to ``n`` calls with unique call ids:

- floor: ``await tool(args)``, where ``async def tool(args): return args``;
- live: the same calls made by an agent through ``Pipeline()`` (the default guards),
  inside one turn, with the tool a stand-in -- the reference the replay is compared to;
- live + a rule: the same, with one more sync tool.before interceptor on ``exec`` (a
  ``git push`` check that never fires here), registered with ``mode="enforce"``, then
  with ``mode="shadow"``: what shadowing a rule costs per call (its copy of the
  output, its report of "continue");
- live, audit log: the same, with an ``AuditLog`` attached (every event a flushed JSON
  line), recording off, then on (``AuditLog.attach(pipe, record_args=True,
  record_results=True)``): the difference is what recording costs the agent per call;
- replay: ``replay(log, pipe, probe)`` of ``n`` recorded calls already in memory, through
  the stack an empty config builds (the default guards) with the decision probe, as
  ``interpose replay`` does (building the stack is not timed; entering it is);
- read: ``read_log`` of a file of ``n`` recorded calls (decoding and checking each line);
- read + replay: both, the file streamed (``replay(LogReader(path), ...)``: each call
  replayed as its line is read), as ``interpose replay AUDIT.jsonl --config NEW.toml``
  does.  A large log's time and memory: ``bench_replay_log.py``.

Reported: µs per call, calls per second, and each case's ratio to "live" measured in
the same run.  Target: a replay of at least 2,000 recorded calls per second (read +
replay), so that a week of traffic of a busy agent (100,000 tool calls) replays in under
a minute.

Methodology: ``harness.py``'s (calibrated loops, warm-up, rounds in a shuffled order
with the garbage collector off, a case's number the median over rounds).

Run it with ``python benchmarks/bench_replay.py [--quick] [--json out.json]``.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import msgspec
from harness import (
    Case,
    Column,
    floor_case,
    measure,
    option_parser,
    print_header,
    run_settings,
    table,
    tool,
    write_results,
)

from interpose import Pipeline
from interpose.bus.events import CallRecorded, encode_event
from interpose.observers import AuditLog
from interpose.pipeline.shadow import Mode
from interpose.replay import (
    LogReader,
    RecordedCall,
    RecordedLog,
    build_candidate,
    read_log,
    replay,
)

Args = dict[str, Any]
TARGET_CALLS_PER_S = 2000.0

SESSION: list[tuple[str, Args]] = [
    ("exec", {"command": "git status"}),
    ("exec", {"command": "ls -la src"}),
    ("exec", {"command": "git diff --stat"}),
    ("read", {"path": "README.md"}),
    ("read", {"path": "~/.ssh/id_rsa"}),
    ("write", {"path": "notes.txt", "content": "remember the milk\n" * 4}),
    ("web_fetch", {"url": "https://example.com/docs"}),
    ("exec", {"command": "pytest -q"}),
]


def no_push(inp: Any, out: Any) -> None:
    """The rule a rollout would shadow: a sync tool.before check."""
    if out.args.get("command", "").startswith("git push"):
        out.block, out.block_reason = True, "pushes go through CI"


def live_case(
    audit: Path | None = None, *, recording: bool = False, rule: Mode | None = None
) -> Any:
    async def loop(n: int) -> int:
        pipe = Pipeline(tracing="off")
        if rule is not None:
            pipe.intercept("tool.before", tools=["exec"], id="no-push", mode=rule)(no_push)
        log = None
        if audit is not None:
            log = AuditLog(audit, max_bytes=None)
            log.attach(pipe, record_args=recording, record_results=recording)
        calls = [(name, dict(args)) for name, args in SESSION]
        async with pipe, pipe.turn(agent_id="bench", turn_id="t1") as turn:
            start = time.perf_counter_ns()
            for i in range(n):
                name, args = calls[i % len(calls)]
                await turn.call_tool(name, args, call=tool, call_id=f"c{i}")
            elapsed = time.perf_counter_ns() - start
        if log is not None:
            log.close()
            os.unlink(log.path)  # untimed: the next run starts a new file
        return elapsed

    return loop


def record_session(path: Path, events: set[str] | None = None) -> None:
    """Run the session through ``Pipeline()`` (the default guards) in one turn (id
    ``t1``, call ids ``c0``...), recorded with args and results into the audit log at
    ``path`` (only ``events`` if given)."""

    async def record() -> None:
        pipe = Pipeline()
        log = AuditLog(path, max_bytes=None)
        log.attach(pipe, record_args=True, record_results=True, events=events)
        async with pipe, pipe.turn(agent_id="bench", turn_id="t1") as turn:
            for i, (name, args) in enumerate(SESSION):
                await turn.call_tool(name, dict(args), call=tool, call_id=f"c{i}")
        log.close()

    anyio.run(record)


def recorded_session() -> list[CallRecorded]:
    """The session's calls as an audit log records them (through the default guards)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "session.jsonl"
        record_session(path, events={"call_recorded"})
        events = [c.event for c in read_log(path).calls]
    if len(events) != len(SESSION):
        raise RuntimeError(f"recorded {len(events)} calls, expected {len(SESSION)}")
    return events


def cycled(session: list[CallRecorded], n: int) -> list[CallRecorded]:
    return [
        msgspec.structs.replace(session[i % len(session)], tool_call_id=f"c{i}", seq=i + 1)
        for i in range(n)
    ]


def replay_case(session: list[CallRecorded], config: Path) -> Any:
    async def loop(n: int) -> int:
        log = RecordedLog(
            calls=[RecordedCall(e, "bench", i) for i, e in enumerate(cycled(session, n))]
        )
        pipe, probe = build_candidate(config)
        start = time.perf_counter_ns()
        report = await replay(log, pipe, probe)
        elapsed = time.perf_counter_ns() - start
        if report.replayed != n or report.changed:
            raise RuntimeError("the replay through the same stack should change nothing")
        return elapsed

    return loop


def write_log(session: list[CallRecorded], n: int, path: Path) -> None:
    with path.open("wb") as f:
        for event in cycled(session, n):
            f.write(encode_event(event) + b"\n")


def read_case(session: list[CallRecorded], scratch: Path) -> Any:
    async def loop(n: int) -> int:
        path = scratch / f"read-{n}.jsonl"
        write_log(session, n, path)
        start = time.perf_counter_ns()
        log = read_log(path)
        elapsed = time.perf_counter_ns() - start
        path.unlink()
        if len(log.calls) != n:
            raise RuntimeError("read_log lost calls")
        return elapsed

    return loop


def read_replay_case(session: list[CallRecorded], scratch: Path, config: Path) -> Any:
    async def loop(n: int) -> int:
        path = scratch / f"both-{n}.jsonl"
        write_log(session, n, path)
        pipe, probe = build_candidate(config)
        start = time.perf_counter_ns()
        report = await replay(LogReader(path), pipe, probe)  # streamed, as the command does
        elapsed = time.perf_counter_ns() - start
        path.unlink()
        if report.replayed != n:
            raise RuntimeError("the replay lost calls")
        return elapsed

    return loop


@dataclass
class Row:
    case: str
    us_per_call: float
    calls_per_s: float
    ratio_to_live: float
    target: str = ""
    result: str = ""


def analyse(cases: list[Case]) -> list[Row]:
    """Medians (ns per call) into rows: µs, calls/s, ratio to the live calls.

    Raises:
        KeyError: a case the table needs was not measured.
    """
    t = {c.key: c.median for c in cases}
    live = t["live"]
    rows = []
    for c in cases:
        ns = t[c.key]
        row = Row(c.label, ns / 1000, 1e9 / ns, ns / live)
        if c.key == "both":
            row.target = f">= {TARGET_CALLS_PER_S:,.0f}/s"
            row.result = "PASS" if row.calls_per_s >= TARGET_CALLS_PER_S else "MISS"
        rows.append(row)
    return rows


COLUMNS = (
    Column("case", 44, "case"),
    Column("us/call", 9, "us_per_call", ".2f"),
    Column("calls/s", 10, "calls_per_s", ",.0f"),
    Column("x live", 7, "ratio_to_live", ".2f"),
    Column("target", 12, "target", gap="  "),
    Column("result", 0, "result"),
)


def render(rows: list[Row]) -> str:
    return table(COLUMNS, rows)


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run every case, print the table (and write JSON if asked).

    Raises:
        RuntimeError: a replay does not behave as expected.
        OSError: a file cannot be written.
    """
    opts = option_parser(__doc__).parse_args(argv)
    rounds, target_ms = run_settings(opts, 15, 50.0, quick_target_ms=20.0)
    info = print_header(
        "interpose bench: replay throughput", opts.quick, rounds, target_ms, "median per call"
    )
    session = recorded_session()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        config = scratch / "same.toml"
        config.write_text("# the default guards\n", encoding="utf-8")
        cases = [
            Case("floor", "floor: await tool(args)", floor_case(SESSION[0][1])),
            Case("live", "live: Pipeline(), one turn", live_case()),
            Case("enforced", "live + a sync rule, enforce", live_case(rule="enforce")),
            Case("shadowed", "live + the same rule, shadow", live_case(rule="shadow")),
            Case("audited", "live, audit log (recording off)", live_case(scratch / "a.jsonl")),
            Case(
                "recorded",
                "live, audit log recording args+results",
                live_case(scratch / "r.jsonl", recording=True),
            ),
            Case("replay", "replay (in memory)", replay_case(session, config)),
            Case("read", "read_log", read_case(session, scratch)),
            Case(
                "both",
                "read_log + replay (interpose replay)",
                read_replay_case(session, scratch, config),
            ),
        ]
        started = time.perf_counter()
        measure(cases, rounds, target_ms)
    rows = analyse(cases)
    print(render(rows))
    print(f"\n(measured in {time.perf_counter() - started:.1f} s)")
    if opts.json:
        write_results(opts.json, info, rounds, target_ms, cases, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
