"""Replaying a large audit log: wall time, calls per second and peak memory of
``interpose replay``, against a floor that only reads the same file.

What it measures.  A session of eight tool calls (``bench_replay.SESSION``: three
``exec``, two ``read`` of which the path guard refuses one, a ``write``, a ``web_fetch``,
a ``pytest -q``) is recorded through ``Pipeline()`` (the default guards) by the audit
observer with recording on (``AuditLog.attach(pipe, record_args=True,
record_results=True)``, every event kind), then copied turn after turn, each with its
own turn and call ids, into an audit log of ``--size`` bytes (default 1 GiB) in a
temporary directory.  Each case is a child process, timed from start to exit; its peak
resident memory is its ``VmHWM`` (``/proc/self/status``), read by the child as it exits
(``ru_maxrss`` of a child started from this process would count this process's memory
at the fork):

- floor: read the log line by line and decode each line with msgspec
  (``decode_event``), nothing else: what any replay pays to read the file;
- startup: ``python -m interpose.cli replay`` of one copy of the session (eight calls)
  through the stack an empty config builds: the command's fixed time and memory;
- replay: ``python -m interpose.cli replay LOG --config same.toml --json`` of the whole log,
  through the same stack (no call changes: the report is empty).

Reported: seconds, recorded calls per second, peak RSS (MiB), and the replay's time
over the floor's.  Targets: the replay's peak RSS stays within 64 MiB of the startup's,
whatever the log's size (memory is bounded by the report, not the log); and it
replays at least 2,000 calls per second (``bench_replay.py``'s target).

Run it with ``python benchmarks/bench_replay_log.py [--size 1GiB] [--rounds N]
[--json out.json]``; ``--size 64MiB`` for a shorter run.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench_replay import SESSION, record_session
from harness import machine

MIB = 1024 * 1024
RSS_GROWTH_MIB = 64.0
TARGET_CALLS_PER_S = 2000.0

FLOOR = """\
import sys
from interpose.bus.events import CallRecorded, decode_event
calls = 0
with open(sys.argv[1], "rb") as log:
    for line in log:
        line = line.strip()
        if line:
            calls += isinstance(decode_event(line), CallRecorded)
print(calls)
"""

# runs ``-m MODULE ARGS`` or ``-c CODE ARGS`` and, at exit, writes the process's peak
# RSS (VmHWM, KiB) to the file named first: the child's own, measured inside it
PEAK = """\
import atexit, runpy, sys

def peak():
    with open("/proc/self/status") as status:
        kib = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(report, "w") as out:
        out.write(kib)

report, how, what = sys.argv[1:4]
atexit.register(peak)
sys.argv = [what, *sys.argv[4:]]
if how == "-m":
    runpy.run_module(what, run_name="__main__", alter_sys=True)
else:
    exec(compile(what, "<floor>", "exec"), {"__name__": "__main__"})
"""


def size(text: str) -> int:
    """``1GiB``, ``64MiB``, ``512KiB`` or a number of bytes."""
    found = re.fullmatch(r"(\d+)\s*([KMG]i?B?)?", text.strip(), re.IGNORECASE)
    if found is None:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 1GiB, 64MiB, 4096)")
    unit = (found.group(2) or "B")[0].upper()
    return int(found.group(1)) * {"B": 1, "K": 1024, "M": MIB, "G": 1024 * MIB}[unit]


def recorded_turn() -> bytes:
    """The session's audit lines (one turn, id ``t1``, call ids ``c0``... ``c7``)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "session.jsonl"
        record_session(path)
        return path.read_bytes()


def write_log(turn: bytes, path: Path, target: int) -> int:
    """Copies of ``turn`` with fresh ids until ``path`` holds ``target`` bytes (at
    least one copy); returns the number of recorded calls written."""
    template = turn.replace(b'"turn_id":"t1"', b'"turn_id":"t%(n)d"')
    for i in range(len(SESSION)):
        template = template.replace(b'"tool_call_id":"c%d"' % i, b'"tool_call_id":"c%d-%%(n)d"' % i)
    template = template.replace(b"%", b"%%").replace(b"%%(n)d", b"%(n)d")
    written = copies = 0
    with path.open("wb") as out:
        while copies == 0 or written < target:
            chunk = template % {b"n": copies}
            out.write(chunk)
            written += len(chunk)
            copies += 1
    return copies * len(SESSION)


@dataclass
class Run:
    seconds: float
    peak_rss_mib: float
    stdout: str


def run_child(args: list[str], scratch: Path) -> Run:
    """Run ``python -m MODULE ARGS`` or ``python -c CODE ARGS`` to its end; its wall
    time and its peak RSS (``VmHWM``, read by the child itself as it exits).

    Raises:
        RuntimeError: the child failed (its stderr says why).
    """
    out, err, peak = scratch / "child.out", scratch / "child.err", scratch / "child.peak"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        start = time.perf_counter()
        code = subprocess.call(
            [sys.executable, "-c", PEAK, str(peak), *args], stdout=stdout, stderr=stderr
        )
        seconds = time.perf_counter() - start
    if code != 0:
        raise RuntimeError(f"{args[:2]} exited {code}: {err.read_text(errors='replace')[-2000:]}")
    return Run(seconds, int(peak.read_text()) / 1024, out.read_text())


def replayed(run: Run, expected: int) -> int:
    """The replayed calls the JSON report counts.

    Raises:
        RuntimeError: not every call was replayed, or one changed.
    """
    summary = json.loads(run.stdout)["summary"]
    if summary["replayed"] != expected or summary["changed"]:
        raise RuntimeError(f"expected {expected} unchanged calls replayed, got {summary}")
    return int(summary["replayed"])


@dataclass
class Row:
    case: str
    seconds: float
    calls_per_s: float
    peak_rss_mib: float
    x_floor: float
    target: str = ""
    result: str = ""


def measure(scratch: Path, log_size: int, rounds: int) -> tuple[dict[str, Any], list[Row]]:
    """Write the logs, run every case ``rounds`` times (medians), make the rows.

    Raises:
        RuntimeError: a child failed or a replay did not replay every call unchanged.
    """
    turn = recorded_turn()
    big, small, config = scratch / "audit.jsonl", scratch / "one.jsonl", scratch / "same.toml"
    config.write_text("# the default guards\n", encoding="utf-8")
    started = time.perf_counter()
    calls = write_log(turn, big, log_size)
    print(
        f"log: {big.stat().st_size / MIB:,.1f} MiB, {calls:,} recorded calls "
        f"(written in {time.perf_counter() - started:.1f} s)\n"
    )
    session = write_log(turn, small, 1)
    replay = ["-m", "interpose.cli", "replay", "--config", str(config), "--json"]
    cases = {
        "floor": (["-c", FLOOR, str(big)], calls),
        "startup": ([*replay, str(small)], session),
        "replay": ([*replay, str(big)], calls),
    }
    runs: dict[str, list[Run]] = {key: [] for key in cases}
    for _ in range(rounds):
        for key, (args, expected) in cases.items():
            run = run_child(args, scratch)
            if key == "floor" and int(run.stdout) != expected:
                raise RuntimeError(f"the floor read {run.stdout.strip()} calls, not {expected}")
            if key != "floor":
                replayed(run, expected)
            runs[key].append(run)
    median = {
        key: Run(
            statistics.median(r.seconds for r in found),
            statistics.median(r.peak_rss_mib for r in found),
            "",
        )
        for key, found in runs.items()
    }
    floor, startup = median["floor"], median["startup"]
    rows = []
    for key, run in median.items():
        n = cases[key][1]
        rows.append(
            Row(key, run.seconds, n / run.seconds, run.peak_rss_mib, run.seconds / floor.seconds)
        )
    replay_row = rows[-1]
    growth = replay_row.peak_rss_mib - startup.peak_rss_mib
    rows.append(
        Row(
            "  replay RSS - startup RSS (MiB)",
            0.0,
            0.0,
            growth,
            0.0,
            f"<= {RSS_GROWTH_MIB:g} MiB",
            "PASS" if growth <= RSS_GROWTH_MIB else "MISS",
        )
    )
    replay_row.target = f">= {TARGET_CALLS_PER_S:,.0f}/s"
    replay_row.result = "PASS" if replay_row.calls_per_s >= TARGET_CALLS_PER_S else "MISS"
    cases_out = {
        key: {
            "calls": cases[key][1],
            "seconds": [r.seconds for r in found],
            "peak_rss_mib": [r.peak_rss_mib for r in found],
        }
        for key, found in runs.items()
    }
    return {"log_bytes": big.stat().st_size, "calls": calls, "cases": cases_out}, rows


def render(rows: list[Row]) -> str:
    header = (
        f"{'case':<34} {'seconds':>9} {'calls/s':>10} {'peak RSS MiB':>13} {'x floor':>8}"
        f"  {'target':<12} result"
    )
    lines = [header, "-" * len(header)]
    for r in rows:
        if r.seconds:
            numbers = (
                f"{r.seconds:>9.2f} {r.calls_per_s:>10,.0f} {r.peak_rss_mib:>13.1f}"
                f" {r.x_floor:>8.2f}"
            )
        else:
            numbers = f"{'':>9} {'':>10} {r.peak_rss_mib:>13.1f} {'':>8}"
        lines.append(f"{r.case:<34} {numbers}  {r.target:<12} {r.result}".rstrip())
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the cases, print the table (and write JSON if asked).

    Raises:
        RuntimeError: a child failed or a replay went wrong.
        OSError: a file cannot be written.
    """
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size", type=size, default=size("1GiB"), help="the log's size (1GiB)")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each case (median)")
    parser.add_argument("--json", metavar="PATH", default=None, help="write results as JSON")
    opts = parser.parse_args(argv)
    info = machine()
    print("interpose bench: replaying a large audit log")
    print(
        f"Python {info['python']} ({info['implementation']}) on {info['platform']}; "
        f"processor: {info['processor']}; {info['cpu_count']} CPUs; "
        f"interpose {info['interpose']} at {info['revision']}"
    )
    print(f"{opts.rounds} round(s); each case a child process; median per case\n")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        results, rows = measure(Path(tmp), opts.size, opts.rounds)
    print(render(rows))
    print(f"\n(measured in {time.perf_counter() - started:.1f} s)")
    if opts.json:
        payload = {
            "machine": info,
            "rounds": opts.rounds,
            **results,
            "rows": [asdict(r) for r in rows],
        }
        with open(opts.json, "w", encoding="utf-8") as f:
            json.dump(payload, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
