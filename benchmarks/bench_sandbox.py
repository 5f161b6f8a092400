"""What the sandbox adds to a command: a sandboxed ``true`` against a plain ``true``, and
a small pytest run in the sandbox against the same run outside, in one run.

What it measures (milliseconds per command, wall time, on one asyncio event loop via
anyio; every command is a real child process):

- floor, plain ``true``: ``anyio.open_process(["true"])``, its output read, waited for:
  what starting any command costs here.
- sandboxed ``true``: ``await Sandbox(SandboxPolicy(...)).run(["true"])`` with the
  default policy (read-only root, the working directory writable, the sensitive paths
  hidden, no network, 512 processes: a pids cgroup per run as root, ``prlimit`` inside):
  the policy resolved, the cgroup made and removed, bubblewrap's namespaces and mounts.
  Target: at most 15 ms above the floor (DESIGN.md: sandbox <= 15 ms per command).
- sandboxed ``true`` without limits (informational): the same without the process
  limit, so without the cgroup and ``prlimit``.
- network ``domains`` (informational): the same with a domain allow-list, so the
  filtering proxy is served for the run and a Python bridge starts inside.
- pytest outside / in the sandbox (informational, a ratio): ``python -m pytest -q`` on a
  project of 20 small tests, in the sandbox and not (``PYTEST_DISABLE_PLUGIN_AUTOLOAD``:
  the plugins installed beside pytest would dominate).

Methodology (harness.py's, inside one anyio event loop): every case is calibrated to a
count of commands whose run lasts about ``--target-ms``, warmed up, then each round runs
every case once in a shuffled order; a case's time is its median over rounds, and a
difference or ratio is the median of the per-round values.

Run it with ``python benchmarks/bench_sandbox.py [--quick] [--json out.json]``.  Linux
with bubblewrap only (``apt-get install bubblewrap``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio
from harness import (
    Case,
    Loop,
    Row,
    analyse,
    clock,
    option_parser,
    print_header,
    render,
    run_once_async,
    run_settings,
    time_rounds,
    write_results,
)

from interpose.sandbox import Limits, Sandbox, SandboxPolicy

TARGET_MS = 15.0
# pytest without the plugins installed beside it (the dev extra's load for seconds)
ENV = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
TESTS = "".join(f"def test_{i}():\n    assert {i} + 1 > {i}\n\n" for i in range(20))


def plain(argv: list[str], cwd: str) -> Loop:
    async def loop(n: int) -> int:
        start = clock()
        for _ in range(n):
            done = await anyio.run_process(
                argv, cwd=cwd, env=ENV, check=False, stderr=subprocess.PIPE
            )
            if done.returncode != 0:
                raise RuntimeError(f"{argv} failed: {done.stderr!r}")
        return clock() - start

    return loop


def sandboxed(sandbox: Sandbox, argv: list[str], cwd: str) -> Loop:
    async def loop(n: int) -> int:
        start = clock()
        for _ in range(n):
            result = await sandbox.run(argv, cwd=cwd, env=ENV)
            if result.exit_code != 0:
                raise RuntimeError(f"{argv} failed in the sandbox: {result.stderr!r}")
        return clock() - start

    return loop


def build_cases(project: str) -> list[Case]:
    pytest_argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    default = Sandbox(SandboxPolicy())
    return [
        Case("true", "plain true (floor)", plain(["true"], project)),
        Case("sandbox", "sandboxed true", sandboxed(default, ["true"], project)),
        Case(
            "nolimits",
            "sandboxed true, no limits",
            sandboxed(Sandbox(SandboxPolicy(limits=Limits(processes=None))), ["true"], project),
        ),
        Case(
            "domains",
            "sandboxed true, domain allow-list",
            sandboxed(
                Sandbox(SandboxPolicy(network="domains", domains=("example.org",))),
                ["true"],
                project,
            ),
        ),
        Case("pytest", "pytest, 20 tests, outside", plain(pytest_argv, project)),
        Case(
            "pytest_sb",
            "pytest, 20 tests, in the sandbox",
            sandboxed(default, pytest_argv, project),
        ),
    ]


def rows_of(t: Mapping[str, float], cases: Sequence[Case]) -> list[Row]:
    floor = t["true"]
    labels = {c.key: c.label for c in cases}

    def row(key: str, measure: str = "", value: float | None = None, target: str = "") -> Row:
        return Row(labels[key], t[key], t[key] - floor, measure, value, None, target)

    pytest_row = row("pytest_sb", "added to a pytest run", t["pytest_sb"] - t["pytest"], "info")
    pytest_row.ratio = t["pytest_sb"] / t["pytest"]
    return [
        row("true"),
        row("sandbox", "added per command", t["sandbox"] - floor, f"<= {TARGET_MS * 1e6:g}"),
        row("nolimits", "added per command", t["nolimits"] - floor, "info"),
        row("domains", "added per command", t["domains"] - floor, "info"),
        row("pytest"),
        pytest_row,
    ]


async def calibrate_and_time(cases: Sequence[Case], rounds: int, target_ms: float) -> None:
    for case in cases:  # a command lasts milliseconds: a few suffice per run
        elapsed = await run_once_async(case.loop, 2)
        case.n = max(2, min(200, int(target_ms * 1e6 * 2 / max(elapsed, 1))))
        await run_once_async(case.loop, case.n)  # warm-up
    await time_rounds(cases, rounds)


def main(argv: list[str] | None = None) -> int:
    """Run every case, print the table (and write JSON if asked).

    Raises:
        RuntimeError: a command failed, in the sandbox or not.
    """
    opts = option_parser(__doc__).parse_args(argv)
    rounds, target_ms = run_settings(opts, 9, 400.0, quick_target_ms=50.0)
    info = print_header(
        "interpose bench: what the sandbox adds per command",
        opts.quick,
        rounds,
        target_ms,
        "median ns per command (the table's numbers; ms in the summary below)",
    )
    Sandbox().check()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as project:
        (Path(project) / "test_small.py").write_text(TESTS)
        cases = build_cases(project)
        anyio.run(calibrate_and_time, cases, rounds, target_ms)
    rows = analyse(cases, rows_of)
    print(render(rows))
    added, ratio = rows[1].value or 0.0, rows[5].ratio or 0.0
    sandboxed_ms, plain_ms = (
        (rows[1].ns_per_call or 0.0) / 1e6,
        (rows[0].ns_per_call or 0.0) / 1e6,
    )
    print(
        f"\nsandboxed true: {sandboxed_ms:.2f} ms, plain true "
        f"{plain_ms:.2f} ms: +{added / 1e6:.2f} ms per command "
        f"(target <= {TARGET_MS:g} ms): {rows[1].result}"
    )
    print(f"pytest of 20 tests: {ratio:.2f}x in the sandbox (+{(rows[5].value or 0) / 1e6:.1f} ms)")
    print(f"(measured in {time.perf_counter() - started:.1f} s)")
    if opts.json:
        write_results(opts.json, info, rounds, target_ms, cases, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
