"""The analysis budget of bench_guards.py: the command guard's analysis time and peak
memory on inputs up to 64 KB (and one of 1 MiB), each against its target (the targets
and what the inputs are: bench_guards.py's docstring)."""

from __future__ import annotations

import gc
import statistics
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

import harness
from harness import Column, table, verdict

from interpose.middleware.builtins import CommandSafetyGuard, analyze_command
from interpose.pipeline.payloads import ToolBeforeInput, ToolBeforeOutput


class FreshCommandGuard(CommandSafetyGuard):
    """The command guard without its memory: every call analyzes the command."""

    CACHE_SIZE = 0


# -- the analysis budget --------------------------------------------------------------------

KB64 = 64 * 1024
MIB = 1 << 20
SHORT_MS = 50.0  # target for any input of at most 64 KB
CI_JOB = Path(__file__).with_name("data") / "ci_pipeline.sh"
"""A real CI job of about 3,000 words (28 KB): set -euxo pipefail, apt-get, pip, a loop
over nine services with functions, case, heredocs, docker build/run, helm, terraform."""
MIB_MS = 1000.0  # target for a 1 MiB input

_SHORT_LINES = (
    "cd src && make -j4 all",
    'echo "building $TARGET" | tee -a build.log',
    "ls -la /tmp/cache | grep -v lock > out.txt",
    "git status --short | head -n 20",
    "python3 -m pytest -q tests/unit || exit 1",
    'export PATH="$HOME/.local/bin:$PATH"',
)


def _repeat(unit: str, size: int) -> str:
    """``unit`` repeated to at most ``size`` characters, cut at a whole unit."""
    return unit * (size // len(unit))


def _script(size: int) -> str:
    """A script of short commands of at most ``size`` characters."""
    return _repeat("\n".join(_SHORT_LINES) + "\n", size)


def _largest_script() -> str:
    """The longest :func:`_script` the words budget lets through (a binary search)."""
    unit = len("\n".join(_SHORT_LINES)) + 1
    low, high = 1, KB64 // unit  # low: allowed; high: refused
    while high - low > 1:
        mid = (low + high) // 2
        finding = analyze_command(_script(mid * unit))
        low, high = (mid, high) if finding is None else (low, mid)
    return _script(low * unit)


def budget_inputs() -> dict[str, tuple[str, str]]:
    """key -> (label, command); keys start with the size class: ``s`` (short), ``k``
    (at most 64 KB), ``m`` (about 1 MiB)."""
    doubling = {
        f"k_double{n}": (f"x='rm '; x=\"$x$x\" x{n}", "x='rm '; " + 'x="$x$x"; ' * n + "$x")
        for n in (20, 30, 40)
    }
    echo_doubling = {
        f"k_echo{n}": (f"X=$(echo $X $X) x{n}", "X=a; " + "X=$(echo $X $X); " * n + "$X")
        for n in (20, 30, 40)
    }
    return {
        "s_short": ("typical short command: git status", "git status"),
        **doubling,
        **echo_doubling,
        "k_braces": ("500 nested ${", "echo " + "${x:-" * 500 + "a" + "}" * 500),
        "k_substs": ("100 nested $(", "echo " + "$(echo " * 100 + "x" + ")" * 100),
        "k_script": ("64 KB script of short commands", _script(KB64)),
        "k_words": ("largest script of short commands allowed", _largest_script()),
        "k_ci": ("real CI job, 3,000 words", CI_JOB.read_text()),
        "k_dynamic": ("$X with 2,000 arguments", "$X " + _repeat("/etc/x$y ", 18_000)),
        "k_dynamic300": ("$X with 300 arguments", "$X " + _repeat("/etc/x$y ", 2_700)),
        "k_python": (
            "64 KB python -c program",
            "python3 -c '" + _repeat('import os; print(open("/tmp/x").read()); ', KB64 - 20) + "'",
        ),
        "k_braced": ("64 KB of ${x:-a} words", "echo " + _repeat("${x:-a} ", KB64 - 8)),
        "k_ansi": ("64 KB $'...' string", "echo $'" + _repeat("\\x41", KB64 - 10) + "'"),
        "k_heredoc": (
            "64 KB here-document with $(...)",
            "cat > f <<EOF\n" + _repeat("line $x $(date) text\n", KB64 - 20) + "EOF\n",
        ),
        "k_printf": (
            "64 KB printf ... | sh",
            "printf '" + _repeat("echo hi; ", KB64 - 20) + "' | sh",
        ),
        "m_script": ("1 MiB script of short commands", _script(MIB)),
        "m_quoted": ("1 MiB quoted string", "echo '" + _repeat("a b ", MIB - 8) + "'"),
        "m_heredoc": (
            "1 MiB here-document",
            "cat > f <<'EOF'\n" + _repeat("some text line\n", MIB - 24) + "EOF\n",
        ),
        "m_word": ("1 MiB single word", "echo " + "a" * (MIB - 5)),
        "m_ansi": ("1 MiB $'...' string", "echo $'" + _repeat("\\x41", MIB - 8) + "'"),
        "m_python": (
            "1 MiB python -c program",
            "python3 -c '" + _repeat('x = "a/b"; ', MIB - 16) + "'",
        ),
        "m_oversize": ("1 MiB + 1 character (size)", "echo " + "a" * (MIB - 4)),
    }


@dataclass
class BudgetRow:
    case: str
    chars: int
    median_ms: float
    max_ms: float
    x_short: float
    target: str
    result: str
    decision: str
    peak_kib: float


def _decide(guard: CommandSafetyGuard, command: str) -> str:
    out = ToolBeforeOutput(args={"command": command})
    guard(ToolBeforeInput(tool_name="exec"), out)
    if not out.block:
        return "allowed"
    rule = out.block_reason.split(": ", 2)[1]
    if rule == "too-complex":
        return "refused: " + out.block_reason.split("(", 1)[1].split(":", 1)[0]
    return f"refused: {rule}"


def _time_ms(guard: CommandSafetyGuard, command: str, rounds: int) -> list[float]:
    inp = ToolBeforeInput(tool_name="exec")
    out = ToolBeforeOutput(args={"command": command})
    samples: list[float] = []
    for _ in range(rounds):
        out.block = False
        gc.collect()
        gc.disable()
        try:
            start = harness.clock()
            guard(inp, out)
            samples.append((harness.clock() - start) / 1e6)
        finally:
            gc.enable()
    return samples


def _peak_kib(guard: CommandSafetyGuard, command: str) -> float:
    out = ToolBeforeOutput(args={"command": command})
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        guard(ToolBeforeInput(tool_name="exec"), out)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return (peak - before) / 1024


def measure_budget(rounds: int) -> list[BudgetRow]:
    """Time every budget input ``rounds`` times, interleaved; one row each, and the worst
    64 KB input again as its own row.

    Raises:
        RuntimeError: a review case is not refused.
    """
    guard = FreshCommandGuard()  # every round analyzes
    inputs = budget_inputs()
    decisions = {key: _decide(guard, command) for key, (_, command) in inputs.items()}
    for key in ("k_double30", "k_double40", "k_echo30", "k_echo40", "k_braces", "k_substs"):
        if not decisions[key].startswith("refused: "):
            raise RuntimeError(f"{key} should be refused, got {decisions[key]}")
    if decisions["k_ci"] != "allowed":  # judged, not refused as too complex
        raise RuntimeError(f"the CI job should be judged and allowed, got {decisions['k_ci']}")
    samples: dict[str, list[float]] = {key: [] for key in inputs}
    for _ in range(rounds):  # interleaved, so a noisy moment is spread over all inputs
        for key, (_, command) in inputs.items():
            samples[key] += _time_ms(guard, command, 1)
    for key, (_, command) in inputs.items():
        again = _decide(guard, command)
        if again != decisions[key]:  # only the wall-time backstop can make it differ
            decisions[key] += f" / {again}"
    short = statistics.median(samples["s_short"])
    rows: list[BudgetRow] = []
    for key, (label, command) in inputs.items():
        median = statistics.median(samples[key])
        limit = MIB_MS if key.startswith("m_") else SHORT_MS
        rows.append(
            BudgetRow(
                label,
                len(command),
                median,
                max(samples[key]),
                median / short,
                f"<= {limit:g} ms",
                verdict(median <= limit),
                decisions[key],
                _peak_kib(guard, command),
            )
        )
    sized = [row for row, key in zip(rows, inputs, strict=True) if key.startswith("k_")]
    worst = max(sized, key=lambda row: row.median_ms)
    rows.append(
        BudgetRow(
            f"worst case at <= 64 KB: {worst.case}",
            worst.chars,
            worst.median_ms,
            worst.max_ms,
            worst.x_short,
            worst.target,
            worst.result,
            worst.decision,
            worst.peak_kib,
        )
    )
    return rows


BUDGET_COLUMNS = (
    Column("input", 44, "case", cut=True),
    Column("chars", 8, "chars", "d"),
    Column("median ms", 10, "median_ms", ".3f"),
    Column("max ms", 8, "max_ms", ".2f"),
    Column("x short", 9, "x_short", ".1f"),
    Column("target", 12, "target", gap="  "),
    Column("result", 6, "result"),
    Column("peak KiB", 9, "peak_kib", ".0f"),
    Column("decision", 0, "decision", gap="  "),
)


def render_budget(rows: list[BudgetRow]) -> str:
    return table(BUDGET_COLUMNS, rows)
