"""The harness every benchmark here shares: the clock, the timing loop, paired rounds,
medians, derived values per round, verdicts against targets, the report table, the
machine line, the results file, and the plot.

How a benchmark is run (each script's docstring says what it measures and its targets):
every case is calibrated to a loop count ``n`` whose run lasts about ``--target-ms``,
warmed up, then timed ``--rounds`` times with the garbage collector off, interleaved:
each round runs every case once, the cases that a value compares one after the other
(``measure``'s ``group``).  A case's time is its median over rounds; a derived value
(a difference, a slope, a ratio) is computed in each round from that round's samples
and reported as its median over rounds (``analyse``), so a burst of load from other
processes lifts both sides of a comparison in the round it hits.  Ratios compare
numbers measured in the same run against a floor measured in that run, so they hold
on any machine; the header states the Python and the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import anyio

import interpose

# What the timed loops read: wall time by default; ``use_clock("cpu")`` reads the
# process's CPU time instead, for a machine shared with other work (no case blocks or
# sleeps, so the two agree on a quiet machine, and CPU time leaves out the time other
# processes ran).
clock: Callable[[], int] = time.perf_counter_ns
CLOCKS: dict[str, Callable[[], int]] = {"wall": time.perf_counter_ns, "cpu": time.process_time_ns}


def use_clock(name: str) -> None:
    """Make ``clock`` read the clock named ``name`` (``"wall"`` or ``"cpu"``)."""
    global clock
    clock = CLOCKS[name]


Loop = Callable[[int], Coroutine[Any, Any, int]]
"""A timed case: ``await loop(n)`` runs the operation n times, returns elapsed ns."""


@dataclass
class Case:
    key: str
    label: str
    loop: Loop
    n: int = 0
    samples: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


# -- the floor and the empty loop, which every benchmark measures in its run ---------------

Args = dict[str, Any]


async def tool(args: Args) -> Args:
    """The tool of every case: the cheapest awaitable that does something with args."""
    return args


def floor_case(args: Args) -> Loop:
    """The floor: ``await tool(args)``, ``n`` times."""

    async def loop(n: int) -> int:
        t = tool
        start = clock()
        for _ in range(n):
            await t(args)
        return clock() - start

    return loop


def empty_loop_case() -> Loop:
    """An empty loop iteration, ``n`` times."""

    async def loop(n: int) -> int:
        start = clock()
        for _ in range(n):
            pass
        return clock() - start

    return loop


# -- timing -------------------------------------------------------------------------------


def run_once(loop: asyncio.AbstractEventLoop, case: Case, n: int) -> int:
    """Run ``case`` for ``n`` iterations with the GC off; returns elapsed ns."""
    gc.collect()
    gc.disable()
    try:
        return loop.run_until_complete(case.loop(n))
    finally:
        gc.enable()


def calibrate(loop: asyncio.AbstractEventLoop, case: Case, target_ns: int) -> int:
    """The loop count whose run lasts about ``target_ns``."""
    n = 16
    while True:
        elapsed = run_once(loop, case, n)
        if elapsed >= target_ns // 4 or n >= 1 << 26:
            break
        n *= 4
    return max(16, int(n * target_ns / max(elapsed, 1)))


def measure(
    cases: Sequence[Case],
    rounds: int,
    target_ms: float,
    group: Callable[[Case], int] | None = None,
) -> None:
    """Calibrate, warm up and time every case ``rounds`` times, interleaved: each round
    runs every case once, in a shuffled order.  With ``group``, the cases of a group
    run one after the other (the groups in a shuffled order, the cases of each in a
    shuffled order), so that the cases compared with each other are timed close
    together in every round."""
    target_ns = int(target_ms * 1e6)
    loop = asyncio.new_event_loop()
    try:
        for case in cases:
            case.n = calibrate(loop, case, target_ns)
        for case in cases:  # warm-up: caches, compiled chains, branch predictors
            run_once(loop, case, case.n)
        groups: dict[int, list[Case]] = {}
        for case in cases:
            groups.setdefault(group(case) if group is not None else 0, []).append(case)
        order = list(groups.values())
        rng = random.Random(0)
        for _ in range(rounds):
            rng.shuffle(order)
            for members in order:
                rng.shuffle(members)
                for case in members:
                    case.samples.append(run_once(loop, case, case.n) / case.n)
    finally:
        loop.close()


# -- timing, for a benchmark that runs in its own event loop (anyio.run) -----------------


async def run_once_async(loop: Loop, n: int) -> int:
    """``await loop(n)`` with the GC off; returns what it returns (elapsed ns)."""
    gc.collect()
    gc.disable()
    try:
        return await loop(n)
    finally:
        gc.enable()


async def time_rounds(cases: Sequence[Case], rounds: int, per: int = 1) -> None:
    """Time every (calibrated, warmed-up) case ``rounds`` times, interleaved in a
    shuffled order; a sample is the time of one of ``case.n`` iterations over ``per``."""
    order = list(cases)
    rng = random.Random(0)
    for _ in range(rounds):
        rng.shuffle(order)
        for case in order:
            case.samples.append(await run_once_async(case.loop, case.n) / case.n / per)


def paired_ratio(a: Case, b: Case) -> float:
    """The median over rounds of a's time over b's in the same round."""
    return statistics.median(x / y for x, y in zip(a.samples, b.samples, strict=True))


def ratio_lines(rows: Sequence[Mapping[str, Any]], width: int) -> list[str]:
    """The table lines of result rows (``case``, ``ratio``, ``target``, ``result``)."""
    return [
        f"{row['case']:<{width}} {row['ratio']:.2f}x   target {row['target']}   {row['result']}"
        for row in rows
    ]


# -- reporting ----------------------------------------------------------------------------


@dataclass
class Row:
    case: str
    ns_per_call: float | None
    above_floor: float | None
    measure: str = ""
    value: float | None = None
    ratio: float | None = None
    target: str = ""
    result: str = ""


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def meets(target: str, value: float | None, ratio: float | None) -> bool | None:
    """Whether ``value`` (a target in ns) or ``ratio`` (a target in x) meets ``target``
    ("<= 1000 ns", "< 1.0x", ...); None for a row without one."""
    parts = target.split()
    if len(parts) < 2 or parts[0] not in ("<=", "<"):
        return None
    bound_text = parts[1].removesuffix("x")
    got = ratio if bound_text != parts[1] else value
    if got is None:
        return None
    bound = float(bound_text)
    return got <= bound if parts[0] == "<=" else got < bound


def analyse(
    cases: Sequence[Case], rows_of: Callable[[Mapping[str, float], Sequence[Case]], list[Row]]
) -> list[Row]:
    """The table rows, with targets checked.

    ``rows_of`` makes the rows of one set of times per case (medians, or one
    round's samples).  A case's ns/call is its median over rounds.  A derived value (a difference, a
    slope, a ratio) is computed in every round from that round's samples, and its
    median over rounds is shown and checked: the cases a value compares run next to
    each other in each round (``measure``'s ``group``), so a burst of load from other processes
    lifts both sides of a comparison instead of one.

    Raises:
        KeyError: a case the table needs was not measured.
    """
    medians = rows_of({c.key: c.median for c in cases}, cases)
    rounds = min(len(c.samples) for c in cases)
    per_round: list[list[Row]] = []
    for r in range(rounds):
        try:
            per_round.append(rows_of({c.key: c.samples[r] for c in cases}, cases))
        except ZeroDivisionError:  # a reference that measured no difference in this round
            continue
    combined: list[Row] = []
    for i, row in enumerate(medians):
        values = [v for rows in per_round if (v := rows[i].value) is not None]
        ratios = [x for rows in per_round if (x := rows[i].ratio) is not None]
        row.value = statistics.median(values) if values else None
        row.ratio = statistics.median(ratios) if ratios else None
        met = meets(row.target, row.value, row.ratio)
        if met is not None:
            row.result = verdict(met)
        combined.append(row)
    return combined


@dataclass(frozen=True)
class Column:
    """A column of a results table: its title and width, the row attribute it shows,
    and for a number its format spec (right-aligned, ``suffix`` after it); ``gap`` is
    the space before it."""

    title: str
    width: int
    attr: str
    fmt: str = ""
    suffix: str = ""
    gap: str = " "
    cut: bool = False

    def cell(self, row: object) -> str:
        value = getattr(row, self.attr)
        if not self.fmt:  # text, left-aligned (cut to the column if ``cut``)
            text = str(value)[: self.width] if self.cut else str(value)
            return f"{text:<{self.width}}"
        text = "" if value is None else format(value, self.fmt) + self.suffix
        return f"{text:>{self.width}}"

    def head(self) -> str:
        return f"{self.title:>{self.width}}" if self.fmt else f"{self.title:<{self.width}}"


def table(columns: Sequence[Column], rows: Sequence[object]) -> str:
    """The rows as a table: a header line, a rule, a line per row (a blank cell for a
    number that is None)."""

    def line(cells: Sequence[str]) -> str:
        text = "".join(c.gap + cell for c, cell in zip(columns, cells, strict=True))
        return text[len(columns[0].gap) :].rstrip()

    header = line([c.head() for c in columns])
    lines = [header, "-" * len(header)]
    lines += [line([c.cell(r) for c in columns]) for r in rows]
    return "\n".join(lines)


ROW_COLUMNS = (
    Column("case", 44, "case"),
    Column("ns/call", 9, "ns_per_call", "9.1f"),
    Column("+floor", 9, "above_floor", "9.1f"),
    Column("measure", 36, "measure", gap="  "),
    Column("value ns", 9, "value", "9.1f"),
    Column("ratio", 8, "ratio", "5.2f", "x"),
    Column("target", 10, "target", gap="  "),
    Column("result", 6, "result"),
)


def render(rows: Sequence[Row]) -> str:
    """The table of ``Row``s (ns per call, above the floor, the derived value)."""
    return table(ROW_COLUMNS, rows)


def cpu_model() -> str:
    """``platform.processor()``, or the model name from /proc/cpuinfo where that is empty."""
    name = platform.processor()
    if name and name != platform.machine():
        return name
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return name or "unknown"


def revision() -> str:
    """The checkout's commit, with "+changes" if tracked files differ from it; or
    "unknown" outside a git checkout."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        head = subprocess.run(
            ["git", "-C", here, "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head}+changes" if dirty else head


def machine() -> dict[str, Any]:
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": cpu_model(),
        "cpu_count": os.cpu_count(),
        "interpose": getattr(interpose, "__version__", "unknown"),
        "revision": revision(),
    }


# -- what every benchmark's command line, header and results file share ------------------


def option_parser(doc: str | None, *, clock: bool = False) -> argparse.ArgumentParser:
    """The options of every benchmark: --quick, --rounds, --target-ms, --json; with
    ``clock``, --clock too (apply it with :func:`use_clock` after parsing)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
    parser.add_argument("--quick", action="store_true", help="few short rounds (smoke test)")
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds per case")
    parser.add_argument("--target-ms", type=float, default=None, help="length of one timed run")
    parser.add_argument("--json", metavar="PATH", default=None, help="write results as JSON")
    if clock:
        parser.add_argument(
            "--clock",
            choices=tuple(CLOCKS),
            default="wall",
            help="time the loops by wall time (default) or by the process's CPU time",
        )
    return parser


def table_bench(
    doc: str | None,
    argv: list[str] | None,
    title: str,
    build: Callable[[], list[Case]],
    rows_of: Callable[[Mapping[str, float], Sequence[Case]], list[Any]],
    *,
    rounds: int,
    targets: str = "",
    group: Callable[[Case], int] | None = None,
    check: Callable[[], None] | None = None,
) -> int:
    """The ``main`` of a benchmark that times its cases in one table: parse the options,
    ``check()`` that the cases behave, time them, print the rows and the verdict
    (``targets`` says them), write JSON if asked."""
    opts = option_parser(doc, clock=True).parse_args(argv)
    use_clock(opts.clock)
    rounds, target_ms = run_settings(opts, rounds, 20.0)
    info = print_header(
        title, opts.quick, rounds, target_ms, f"median ns per call ({opts.clock} clock)"
    )
    if check is not None:
        check()
    cases = build()
    started = time.perf_counter()
    measure(cases, rounds, target_ms, group=group)
    rows = analyse(cases, rows_of)
    print(render(rows))
    checked = [r for r in rows if r.result]
    missed = [r for r in checked if r.result != "PASS"]
    note = f" ({targets})" if targets else ""
    print(f"\nverdict: {len(checked) - len(missed)} of {len(checked)} targets met{note}")
    print(f"(measured in {time.perf_counter() - started:.1f} s)")
    if opts.json:
        write_results(opts.json, info, rounds, target_ms, cases, rows)
    return 0


def run_settings(
    opts: argparse.Namespace, rounds: int, target_ms: float, quick_target_ms: float = 2.0
) -> tuple[int, float]:
    """(rounds, target ms) of this run: the options, else the full or the quick defaults."""
    return (
        opts.rounds or (5 if opts.quick else rounds),
        opts.target_ms or (quick_target_ms if opts.quick else target_ms),
    )


def print_header(
    title: str, quick: bool, rounds: int, target_ms: float, per: str
) -> dict[str, Any]:
    """Print what is measured, on what, and how; returns the machine description."""
    info = machine()
    print(f"{title} ({'quick' if quick else 'full'} run)")
    print(
        f"Python {info['python']} ({info['implementation']}) on {info['platform']}; "
        f"processor: {info['processor']}; {info['cpu_count']} CPUs; "
        f"interpose {info['interpose']} at {info['revision']}"
    )
    print(f"{rounds} rounds x ~{target_ms:g} ms per case; {per}\n")
    return info


def write_results(
    path: str,
    info: dict[str, Any],
    rounds: int,
    target_ms: float,
    cases: Sequence[Case],
    rows: Sequence[Any],
    *,
    samples: bool = False,
    **extra: Any,
) -> None:
    """Write the run as JSON: every case (loop count, median, minimum, quartiles, and
    with ``samples`` every round's value) and every table row (dataclasses)."""

    def summary(c: Case) -> dict[str, Any]:
        found: dict[str, Any] = {
            "label": c.label,
            "n": c.n,
            "median_ns": c.median,
            "min_ns": min(c.samples),
            "quartiles_ns": statistics.quantiles(c.samples, n=4)
            if len(c.samples) > 1
            else [c.median] * 3,
        }
        if samples:
            found["samples_ns"] = c.samples
        return found

    payload = {
        "machine": info,
        "rounds": rounds,
        "target_ms": target_ms,
        **extra,
        "cases": {c.key: summary(c) for c in cases},
        "rows": [asdict(r) for r in rows],
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(payload, f, indent=2)


def child_bench_main(
    doc: str | None,
    argv: list[str] | None,
    children: Mapping[str, Callable[[], object]],
    title: str,
    bench: Callable[[int, float], Awaitable[dict[str, Any]]],
    render: Callable[[dict[str, Any]], str],
    *,
    rounds: int,
    target_ms: float,
    quick_target_ms: float,
) -> int:
    """The main body of a benchmark that starts children of its own script: with
    ``--child NAME`` be that child, else run ``bench`` (``rounds`` and ``target_ms``
    unless the options say otherwise), print ``render`` of its results and write
    them as JSON if asked.

    Raises:
        RuntimeError: ``bench`` finds a child or the system under test misbehaving.
        OSError: the JSON file cannot be written.
    """
    parser = option_parser(doc)
    parser.add_argument("--child", choices=sorted(children), help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.child:
        children[opts.child]()
        return 0
    rounds, target_ms = run_settings(opts, rounds, target_ms, quick_target_ms=quick_target_ms)
    info = print_header(title, opts.quick, rounds, target_ms, "median per call")
    started = time.perf_counter()
    results = anyio.run(bench, rounds, target_ms)
    print(render(results))
    print(f"\n(measured in {time.perf_counter() - started:.1f} s)")
    if opts.json:
        with open(opts.json, "w", encoding="utf-8") as f:
            json.dump({"machine": info, "rounds": rounds, "target_ms": target_ms, **results}, f)
    return 0


# -- the plot -----------------------------------------------------------------------------

Series = tuple[tuple[str, str, str | None, bool], ...]
"""Plot lines: (label, case key prefix, key of the case with no layers or None, reference?)."""

PLOT_HINT = "needs matplotlib: pip install 'interpose[plot]' (or pip install matplotlib)"


def plot_available() -> bool:
    """Whether matplotlib imports (checked before measuring, not after a minute of it)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def plot(cases: Sequence[Case], series: Series, path: str, title: str) -> None:
    """Draw ns per call against the number of layers (handlers, pairs) of every
    mechanism and reference into ``path`` (PNG, or what its suffix names).

    Raises:
        SystemExit: matplotlib is not installed (the message says how to get it).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit(f"{title} --plot {PLOT_HINT}") from None
    t = {c.key: c.median for c in cases}
    fig, ax = plt.subplots(figsize=(10, 6.5))
    for label, prefix, zero, reference in series:
        depths = sorted(
            int(k[len(prefix) :]) for k in t if k.startswith(prefix) and k[len(prefix) :].isdigit()
        )
        xs = ([0] if zero is not None and 0 not in depths else []) + depths
        ys = ([t[zero]] if zero is not None and 0 not in depths else []) + [
            t[f"{prefix}{d}"] for d in depths
        ]
        ax.plot(xs, ys, "--" if reference else "-", marker="o", label=label)
    ax.axhline(t["floor"], color="grey", linewidth=0.8, label="floor: await tool(args)")
    ax.set_xlabel("layers per tool call (interceptors, middleware layers, pairs, hookimpls)")
    ax.set_ylabel("ns per tool call (median)")
    ax.set_title(f"{title}, Python {platform.python_version()}: the slope is the cost per layer")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
