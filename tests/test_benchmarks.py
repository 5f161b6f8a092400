"""Every benchmark still runs end to end (one tiny round each) and reports what its
docs say it reports.  No timing is asserted here: the numbers are for benchmarks/."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(p.stem for p in BENCHMARKS.glob("bench_*.py"))
# the smallest run of each script (default: one tiny round)
TINY: dict[str, list[str]] = {"bench_replay_log": ["--rounds", "1", "--size", "2MiB"]}


def test_every_benchmark_is_listed_here() -> None:
    assert SCRIPTS == [
        "bench_bus",
        "bench_flows",
        "bench_guards",
        "bench_langchain",
        "bench_mcp_proxy",
        "bench_openai_agents",
        "bench_permissions",
        "bench_process_hook",
        "bench_redis",
        "bench_replay",
        "bench_replay_log",
        "bench_sandbox",
        "bench_secrets",
        "bench_tool_call",
        "bench_tracing",
    ]


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_benchmark_runs_and_writes_its_results(script: str, tmp_path: Path) -> None:
    if script == "bench_redis" and not (
        shutil.which("redis-server") and shutil.which("redis-benchmark")
    ):
        # it starts a redis-server of its own and compares with redis-benchmark
        message = (
            "bench_redis needs redis-server and redis-benchmark (scripts/test.sh installs them)"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    if script == "bench_sandbox":
        from interpose.sandbox import probe

        if not probe().usable:  # it runs commands under bubblewrap
            message = "bench_sandbox needs bubblewrap: " + "; ".join(probe().problems)
            if os.environ.get("CI") == "true":
                pytest.fail(message)
            pytest.skip(message)
    out = tmp_path / "results.json"
    tiny = [*TINY.get(script, ["--rounds", "1", "--target-ms", "1"]), "--json", str(out)]
    run = subprocess.run(
        [sys.executable, str(BENCHMARKS / f"{script}.py"), *tiny],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "interpose bench" in run.stdout
    results = json.loads(out.read_text())
    assert results["rounds"] == 1
    assert results["machine"]["python"]
    assert results["cases"]
    if script == "bench_replay_log":
        # every recorded call of the log was replayed (the script checks the report)
        assert results["calls"] == results["cases"]["replay"]["calls"] > 0
    if script == "bench_process_hook":
        # the target's verdict is printed, whatever it is on a one-round run
        assert "process hook vs the floor (paired)" in run.stdout
        assert set(results["ratios"]) == set(results["cases"])
    else:
        # every row with a target ("info" is none) carries a verdict
        targets = [row for row in results["rows"] if row["target"] not in ("", "info")]
        assert targets
        assert {row["result"] for row in targets} <= {"PASS", "MISS"}


def test_bench_plot_draws_the_slopes(tmp_path: Path) -> None:
    png = tmp_path / "slopes.png"
    tiny = ["--rounds", "1", "--target-ms", "1", "--plot", str(png)]
    run = subprocess.run(
        [sys.executable, str(BENCHMARKS / "bench_tool_call.py"), *tiny],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert f"plot: {png}" in run.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_plot_without_matplotlib_says_how_to_get_it(tmp_path: Path) -> None:
    # matplotlib made unimportable in the child, as on an install without the extra
    blocked = (
        "import sys, runpy; sys.modules['matplotlib'] = None; "
        f"sys.argv = ['bench', '--quick', '--plot', {str(tmp_path / 'x.png')!r}]; "
        f"runpy.run_path({str(BENCHMARKS / 'bench_tool_call.py')!r}, run_name='__main__')"
    )
    run = subprocess.run(
        [sys.executable, "-c", blocked], capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 2
    assert "needs matplotlib: pip install 'interpose[plot]'" in run.stderr
    assert not (tmp_path / "x.png").exists()


def _bench_tool_call() -> Any:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import bench_tool_call
    finally:
        sys.path.remove(str(BENCHMARKS))
    return bench_tool_call


def _benchmark_module(name: str) -> Any:
    """A module of benchmarks/ (the harness, the tool-call cases) by name."""
    _bench_tool_call()  # it imports the harness and its cases
    return sys.modules[name]


def test_a_target_is_read_from_its_row() -> None:
    harness = _benchmark_module("harness")
    assert harness.meets("<= 1000 ns", 999.0, None) is True
    assert harness.meets("<= 1000 ns", 1001.0, 0.5) is False
    assert harness.meets("<= 1.5x", 2000.0, 1.5) is True
    assert harness.meets("< 1.0x", 10.0, 1.0) is False
    assert harness.meets("info", 1.0, 1.0) is None
    assert harness.meets("<= 2.0x", 1.0, None) is None


def test_the_cases_a_value_compares_run_in_one_group() -> None:
    cases = _benchmark_module("tool_call_cases")

    def case(key: str) -> Any:
        return cases.Case(key, key, cases.floor_case(cases.ARGS))

    group = cases.group_of
    assert group(case("mw10")) == group(case("free1")) == group(case("guard5"))
    assert group(case("apair10")) == group(case("spair1")) == group(case("hasync1"))
    assert group(case("sync10")) == group(case("fns1")) == group(case("empty"))
    assert group(case("mw1")) != group(case("sync1"))
    # each switch-on cost compares with an empty pipeline timed in its own group
    assert group(case("emptym")) == group(case("mw1"))
    assert group(case("emptyp")) == group(case("spair1"))


def test_derived_values_are_the_median_of_each_rounds_value() -> None:
    # a burst of load that lifts every case of one round changes that round's values,
    # not the median over rounds; the verdict is taken on the median
    bench = _bench_tool_call()
    cases = _benchmark_module("tool_call_cases").build_cases()
    # distinct times, so that no reference difference is zero
    base = {c.key: 1000.0 + 37.0 * i + 50.0 * len(c.key) for i, c in enumerate(cases)}
    base.update(floor=100.0, empty=400.0, fns1=150.0, fns10=600.0, sync1=800.0, sync10=1200.0)
    for r in range(5):
        lift = 3.0 if r == 2 else 1.0
        for c in cases:
            c.samples.append(base[c.key] * lift)
    rows = {row.case: row for row in bench.analyse(cases)}
    slope = rows["  slope 1->10 per interceptor"]
    assert slope.value == pytest.approx(400 / 9)
    assert slope.ratio == pytest.approx((400 / 9) / (450 / 9))
    assert slope.result == "PASS"
    empty = rows["interpose, empty pipeline"]
    assert empty.value == pytest.approx(300.0)
    assert empty.result == "PASS"
    assert rows["  same, against issue 11's bound"].result == "PASS"


def test_a_round_whose_reference_measured_no_difference_is_left_out() -> None:
    bench = _bench_tool_call()
    cases = _benchmark_module("tool_call_cases").build_cases()
    base = {c.key: 1000.0 + 37.0 * i + 50.0 * len(c.key) for i, c in enumerate(cases)}
    base.update(floor=100.0, fns1=150.0, fns10=600.0, sync1=800.0, sync10=1200.0)
    for _ in range(3):
        for c in cases:
            c.samples.append(base[c.key])
    for c in cases:  # one more round in which the handler loop's slope is zero
        c.samples.append(150.0 if c.key in ("fns1", "fns10") else base[c.key])
    rows = {row.case: row for row in bench.analyse(cases)}
    assert rows["  slope 1->10 per interceptor"].ratio == pytest.approx(400 / 450)


def test_the_contract_rows_carry_the_design_targets() -> None:
    # DESIGN.md's performance contract: printed first, each row with its target
    bench = _bench_tool_call()
    cases = _benchmark_module("tool_call_cases").build_cases()
    base = {c.key: 1000.0 + 37.0 * i + 50.0 * len(c.key) for i, c in enumerate(cases)}
    base.update(floor=100.0, empty=400.0, emptym=410.0, emptyp=420.0, mw1=1200.0, spair1=1300.0)
    for c in cases:
        c.samples.append(base[c.key])
    rows = bench.analyse(cases)
    contract = {row.case: row for row in rows[:8]}
    assert {name: row.target for name, row in contract.items()} == {
        "interpose, empty pipeline": "<= 1000 ns",
        "  same, against issue 11's bound": "<= 500 ns",
        "  switch-on: first sync pair": "<= 1000 ns",
        "  switch-on: first middleware layer": "<= 1000 ns",
        "default (fail-closed) middleware layer": "<= 1.2x",
        'on_error="raise" middleware layer': "<= 1.2x",
        "sync before/after pair": "<= 1.2x",
        "async pair (timeout 5s, not suspending)": "<= 1.2x",
    }
    assert contract["  switch-on: first sync pair"].value == pytest.approx(1300.0 - 420.0)
    assert contract["  switch-on: first middleware layer"].value == pytest.approx(1200.0 - 410.0)
    assert contract["  switch-on: first middleware layer"].result == "PASS"
    pair = (base["spair10"] - base["spair1"]) / (base["hsync10"] - base["hsync1"])
    assert contract["sync before/after pair"].ratio == pytest.approx(pair)
    layer = (base["mw10"] - base["mw1"]) / (base["guard10"] - base["guard1"])
    assert contract["default (fail-closed) middleware layer"].ratio == pytest.approx(layer)
