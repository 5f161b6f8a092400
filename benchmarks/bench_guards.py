"""Cost of the built-in guards per tool call, in one run.

What it measures (µs per call; every case is an ``async def loop(n)`` run on one asyncio
event loop and timed inside the coroutine, like ``bench_tool_call.py``):

- floor: ``await tool(args)``, where ``async def tool(args): return args``;
- the command-safety guard called directly, ``guard(inp, out)``, judging a command it
  has not seen (a guard whose ``CACHE_SIZE`` is 0, so every call analyzes), on five
  typical short commands (``git status``, ``ls -la src``, ``rm -rf build/``, deleting
  under the home directory, ``rm -rf ~/projects/old``, and a short ``&&`` chain,
  ``cd src && git diff``), on a command
  it refuses (``rm -rf /``, informational) and on a realistic 4 KB CI shell script
  (:data:`SCRIPT_4K`: functions, a trap, a here-document, loops, a ``case``, pipelines,
  ``$(...)`` substitutions); target: under 50 µs for each short command, and the median
  over the five (the summary row "median per new short command") at most 25 µs, directly
  and in situ;
- the same commands through ``await pipe.call_tool("exec", {"command": ...}, call=tool)``
  on a pipeline with the built-in guards registered as ``Pipeline()`` registers them but
  never remembering, and on ``Pipeline(builtins=False, tracing="off")``; the difference
  is what the guard costs in situ, the chain it runs in included; target: under 50 µs
  for each short command;
- a repeated command: the default guard (which remembers its last 1,024 verdicts)
  called directly on a command it has judged before, and ``Pipeline(tracing="off")``
  called with it (the 4 KB script, 4,064 characters, is remembered too: commands of up
  to 4,096 are); target: under 2 µs directly for each short command;
- the security-audit guard on a typical path (``src/interpose/pipeline/pipeline.py``),
  directly and through ``pipe.call_tool("read", ...)`` with and without the builtins,
  never remembering and (repeated) remembering; informational;
- each policy builtin, installed alone on ``Pipeline(builtins=False, tracing="off")``,
  called through ``turn.call_tool`` inside one turn (the loop guard counts per turn):
  ``ToolFilter(deny=[...])``, ``RateLimit`` with a bucket that never runs dry,
  ``LoopGuard`` with a limit never reached, ``RedactSecrets`` on a clean 1 KB output,
  ``OutputCap`` on a short output, and a ``ResultCache`` hit on ``read``; against the
  empty pipeline called the same way; informational.

The analysis budget (a second table): the command guard judging inputs built to be
expensive -- the review's cases (``x="$x$x"`` and ``X=$(echo $X $X)`` repeated 20/30/40
times, 500 nested ``${``, 100 nested ``$(``), 64 KB inputs of every shape found to cost
the most per character (a long script of short commands, the largest script the words
budget lets through, a real CI job of 3,000 words (``data/ci_pipeline.sh``, which must
be judged and allowed), a command named at run time with 2,000 and with 300 arguments, a 64 KB
``python -c`` program, ``${...}``, ``$'...'``, here-document and ``printf | sh`` text) and
1 MiB inputs (a script, a quoted string, a here-document, one word, a ``$'...'`` string,
a ``python -c`` program; one character more is refused by size) -- each called
directly, ``rounds`` times, with the garbage collector off; the median and the maximum
in ms, the ratio to the typical short command (``git status``) measured the same way in
the same run, the decision, and the peak of memory allocated during one analysis
(tracemalloc).  Targets: every input of at most 64 KB decided in 50 ms, a 1 MiB input
in 1 s (the median is compared, the maximum printed).

Every case is checked once before timing (the guards allow what they should and refuse
``rm -rf /``; the repeated cases really answer from the guard's memory, the others never
do; the result cache case really answers from the cache).

Methodology: ``harness.py``'s (calibrated loops, warm-up, rounds in a shuffled order
with the garbage collector off, a case's number the median over rounds).

Run it with ``python benchmarks/bench_guards.py [--quick] [--clock cpu] [--json out.json]``
(``--clock cpu``: both tables read the process's CPU time, for a machine shared with
other work).
"""

from __future__ import annotations

import asyncio
import dataclasses
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import harness
from guard_budget import FreshCommandGuard, measure_budget, render_budget
from harness import (
    Args,
    Case,
    Column,
    Loop,
    floor_case,
    measure,
    option_parser,
    print_header,
    run_settings,
    table,
    tool,
    verdict,
    write_results,
)

from interpose import Pipeline, ToolResult
from interpose.middleware.builtins import (
    CommandSafetyGuard,
    LoopGuard,
    OutputCap,
    Policy,
    RateLimit,
    RedactSecrets,
    ResultCache,
    SecurityAudit,
    ToolFilter,
    builtin_interceptors,
)
from interpose.pipeline.payloads import ToolBeforeInput, ToolBeforeOutput

TARGET_US = 50.0
REPEAT_US = 2.0  # a repeated short command, judged directly
MEDIAN_US = 25.0  # the median over the short commands, new to the guard
SHORT_COMMANDS = (
    "git status",
    "ls -la src",
    "rm -rf build/",
    "rm -rf ~/projects/old",
    "cd src && git diff",
)
REFUSED_COMMAND = "rm -rf /"
PATH = "src/interpose/pipeline/pipeline.py"

SCRIPT_4K = r"""#!/usr/bin/env bash
# ci/build.sh: build, test and package the service, then upload the artifacts.
set -euo pipefail
IFS=$'\n\t'

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${ROOT}/build"
DIST_DIR="${ROOT}/dist"
VERSION="$(git -C "$ROOT" describe --tags --always --dirty)"
PYTHON="${PYTHON:-python3}"
JOBS="$(nproc 2>/dev/null || echo 2)"

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

cleanup() {
    local status=$?
    if [ -d "${BUILD_DIR}/tmp" ]; then
        rm -rf "${BUILD_DIR}/tmp"
    fi
    exit "$status"
}
trap cleanup EXIT

require() {
    for tool in "$@"; do
        command -v "$tool" >/dev/null 2>&1 || die "missing tool: $tool"
    done
}

retry() {
    local attempts="$1"; shift
    local n=1
    until "$@"; do
        if [ "$n" -ge "$attempts" ]; then
            return 1
        fi
        log "retry $n/$attempts: $*"
        sleep $((n * 2))
        n=$((n + 1))
    done
}

write_settings() {
    cat > "${BUILD_DIR}/settings.ini" <<SETTINGS
[service]
version = ${VERSION}
workers = ${JOBS}
log_level = info
SETTINGS
}

require git "$PYTHON" docker tar gzip sha256sum

log "building version ${VERSION} with ${JOBS} jobs"
rm -rf build/ dist/
mkdir -p "${BUILD_DIR}/tmp" "${DIST_DIR}"

# a fresh virtual environment, pinned tools
"$PYTHON" -m venv "${BUILD_DIR}/venv"
# shellcheck disable=SC1091
source "${BUILD_DIR}/venv/bin/activate"
pip install --quiet --upgrade pip wheel
pip install --quiet -r requirements/dev.txt

log "linting"
ruff check src tests
ruff format --check src tests
mypy --strict src

log "running the tests"
pytest -q -n "${JOBS}" --junitxml="${BUILD_DIR}/junit.xml" tests/ \
    | tee "${BUILD_DIR}/pytest.log"
failed="$(grep -c '^FAILED' "${BUILD_DIR}/pytest.log" || true)"
if [ "${failed}" -gt 0 ]; then
    die "${failed} tests failed"
fi

log "collecting coverage"
coverage combine --quiet || true
coverage xml -o "${BUILD_DIR}/coverage.xml"
coverage report --fail-under=85 | tail -n 5

log "building the wheel and the sdist"
python -m build --outdir "${DIST_DIR}" .
for artifact in "${DIST_DIR}"/*; do
    sha256sum "$artifact" >> "${DIST_DIR}/SHA256SUMS"
done

log "building the container image"
docker build \
    --build-arg "VERSION=${VERSION}" \
    --label "org.opencontainers.image.revision=$(git rev-parse HEAD)" \
    -t "registry.example.com/team/service:${VERSION}" \
    -f docker/Dockerfile .
docker run --rm "registry.example.com/team/service:${VERSION}" service --version

log "smoke-testing the image"
container="$(docker run -d -p 127.0.0.1:8080:8080 "registry.example.com/team/service:${VERSION}")"
retry 5 curl -fsS http://127.0.0.1:8080/healthz
docker logs "$container" 2>&1 | tail -n 20
docker rm -f "$container"

log "packing the docs"
make -C docs html SPHINXOPTS="-W --keep-going"
tar -czf "${DIST_DIR}/docs-${VERSION}.tar.gz" -C docs/_build html

log "checking the migrations"
write_settings
retry 3 docker compose -f docker/compose.test.yml up -d postgres
export DATABASE_URL="postgresql://ci@localhost:5432/ci"
python -m service.migrations check --settings "${BUILD_DIR}/settings.ini"
docker compose -f docker/compose.test.yml down --volumes --remove-orphans

log "checking the changelog"
if ! grep -q "^## ${VERSION%%-*}" CHANGELOG.md; then
    log "warning: no changelog entry for ${VERSION}"
fi

case "${CI_BRANCH:-local}" in
    main|release/*)
        log "uploading artifacts"
        curl -fsS -o /dev/null \
            -H "Authorization: Bearer ${UPLOAD_TOKEN}" \
            -F "file=@${DIST_DIR}/docs-${VERSION}.tar.gz" \
            "https://artifacts.example.com/upload/service/${VERSION}"
        docker push "registry.example.com/team/service:${VERSION}"
        ;;
    *)
        log "not uploading from branch ${CI_BRANCH:-local}"
        ;;
esac

find "${BUILD_DIR}" -name '*.pyc' -delete
find "${BUILD_DIR}" -type d -name __pycache__ -prune -exec rm -rf {} +
du -sh "${DIST_DIR}" | awk '{print "dist size:", $1}'
ls -la "${DIST_DIR}"
git status --short | head -n 20
log "done: ${VERSION}"
"""
"""A realistic CI build script of about 4 KB that the guard allows."""

CLEAN_OUTPUT = "".join(f"{n:04d} src/module_{n}.py: ok, 12 tests passed\n" for n in range(24))
"""A tool output of about 1 KB with nothing to redact."""


# -- the operations being measured ------------------------------------------------------


class FreshPathGuard(SecurityAudit):
    """The path guard without its memory: every call checks the path."""

    CACHE_SIZE = 0


def fresh_builtins() -> Pipeline:
    """``Pipeline(tracing="off")`` with its two guards registered the same way, but never
    remembering a verdict."""
    pipe = Pipeline(builtins=False, tracing="off")
    command = FreshCommandGuard()
    fresh: dict[type, Callable[..., Any]] = {
        CommandSafetyGuard: command,
        SecurityAudit: FreshPathGuard(),
    }
    for reg in builtin_interceptors():
        owner = getattr(reg.handler, "__self__", None)  # the command guard's approver
        handler = command.approve if owner is not None else fresh[type(reg.handler)]
        pipe.registry.add(dataclasses.replace(reg, handler=handler))
    return pipe


def direct_case(guard: Any, tool_name: str, args: Args) -> Loop:
    """The guard called as the pipeline calls it, ``guard(inp, out)``, with ``out.block``
    reset first so that a refused command is judged again every time."""

    async def loop(n: int) -> int:
        g = guard
        inp = ToolBeforeInput(tool_name=tool_name, tool_call_id="c1")
        out = ToolBeforeOutput(args=args)
        start = time.perf_counter_ns()
        for _ in range(n):
            out.block = False
            g(inp, out)
        return time.perf_counter_ns() - start

    return loop


def pipeline_case(pipe: Pipeline, tool_name: str, args: Args) -> Loop:
    async def loop(n: int) -> int:
        call_tool = pipe.call_tool
        t = tool
        start = time.perf_counter_ns()
        for _ in range(n):
            await call_tool(tool_name, args, call=t)
        return time.perf_counter_ns() - start

    return loop


def turn_case(pipe: Pipeline, tool_name: str, args: Args, call: Any = tool) -> Loop:
    """``n`` calls through ``turn.call_tool`` inside one turn (opened before the clock)."""

    async def loop(n: int) -> int:
        async with pipe.turn(agent_id="bench", session_key="s1") as turn:
            call_tool = turn.call_tool
            start = time.perf_counter_ns()
            for _ in range(n):
                await call_tool(tool_name, args, call=call)
            elapsed = time.perf_counter_ns() - start
        return elapsed  # noqa: RET504 - after the block: a turn may absorb an AbortTurn

    return loop


async def clean_output(args: Args) -> str:
    return CLEAN_OUTPUT


def policy_pipelines() -> dict[str, tuple[str, Pipeline, str, Args, Any]]:
    """key -> (label, a pipeline with that policy alone, tool, args, call)."""
    exec_args: Args = {"command": "git status"}
    read_args: Args = {"path": PATH}
    specs: tuple[tuple[str, str, Policy | None, str, Args, Any], ...] = (
        ("p_none", "no policy (empty pipeline)", None, "exec", exec_args, tool),
        (
            "p_filter",
            "ToolFilter(deny=[group:automation])",
            ToolFilter(deny=["group:automation"]),
            "exec",
            exec_args,
            tool,
        ),
        (
            "p_rate",
            "RateLimit (bucket never empty)",
            RateLimit(rate=1e12, burst=10**12),
            "exec",
            exec_args,
            tool,
        ),
        (
            "p_loop",
            "LoopGuard (limit never reached)",
            LoopGuard(max_repeats=2**62),
            "exec",
            exec_args,
            tool,
        ),
        (
            "p_redact",
            "RedactSecrets, clean 1 KB output",
            RedactSecrets(),
            "exec",
            exec_args,
            clean_output,
        ),
        ("p_cap", "OutputCap, short output", OutputCap(), "exec", exec_args, tool),
        ("p_cache", "ResultCache hit on read", ResultCache(ttl=1e9), "read", read_args, tool),
    )
    cases: dict[str, tuple[str, Pipeline, str, Args, Any]] = {}
    for key, label, policy, tool_name, args, call in specs:
        pipe = Pipeline(builtins=False, tracing="off")
        if policy is not None:
            policy.install(pipe)
        cases[key] = (label, pipe, tool_name, args, call)
    return cases


def build_cases() -> list[Case]:
    """Every case of the run, checked once before it is timed.

    Raises:
        RuntimeError: a guard or a pipeline does not behave as the benchmark assumes.
    """
    guard, audit = FreshCommandGuard(), FreshPathGuard()
    remembering, remembering_audit = CommandSafetyGuard(), SecurityAudit()
    guarded = fresh_builtins()
    default = Pipeline(tracing="off")
    bare = Pipeline(builtins=False, tracing="off")
    commands = {f"cmd{i}": c for i, c in enumerate(SHORT_COMMANDS)}
    commands["script"] = SCRIPT_4K
    commands["refused"] = REFUSED_COMMAND
    cases = [Case("floor", "floor: await tool(args)", floor_case({"command": "git status"}))]
    for key, command in commands.items():
        args: Args = {"command": command}
        name = _name(command)
        refused = command == REFUSED_COMMAND
        _check_direct(guard, "exec", args, refused)
        _check_remembered(guard, "exec", args, False)
        cases.append(Case(f"d_{key}", f"command guard, {name}", direct_case(guard, "exec", args)))
        if refused:
            continue
        _check_pipe(guarded, "exec", args)
        _check_pipe(bare, "exec", args)
        cases.append(
            Case(f"g_{key}", f"  call_tool, builtins, {name}", pipeline_case(guarded, "exec", args))
        )
        cases.append(
            Case(f"b_{key}", f"  call_tool, no builtins, {name}", pipeline_case(bare, "exec", args))
        )
        _check_remembered(remembering, "exec", args, True)
        _check_pipe(default, "exec", args)
        cases.append(
            Case(
                f"r_{key}",
                f"command guard, repeated {name}",
                direct_case(remembering, "exec", args),
            )
        )
        cases.append(
            Case(
                f"rg_{key}",
                f"  call_tool, builtins, repeated {name}",
                pipeline_case(default, "exec", args),
            )
        )
    path_args: Args = {"path": PATH}
    _check_direct(audit, "read", path_args, False)
    _check_remembered(audit, "read", path_args, False)
    _check_pipe(guarded, "read", path_args)
    cases.append(Case("d_path", "path guard, typical path", direct_case(audit, "read", path_args)))
    cases.append(
        Case("g_path", "  call_tool read, builtins", pipeline_case(guarded, "read", path_args))
    )
    cases.append(
        Case("b_path", "  call_tool read, no builtins", pipeline_case(bare, "read", path_args))
    )
    _check_remembered(remembering_audit, "read", path_args, True)
    _check_pipe(default, "read", path_args)
    cases.append(
        Case(
            "r_path",
            "path guard, repeated path",
            direct_case(remembering_audit, "read", path_args),
        )
    )
    cases.append(
        Case(
            "rg_path",
            "  call_tool read, builtins, repeated",
            pipeline_case(default, "read", path_args),
        )
    )
    for key, (label, pipe, tool_name, args, call) in policy_pipelines().items():
        _check_policy(key, pipe, tool_name, args, call)
        cases.append(Case(key, label, turn_case(pipe, tool_name, args, call)))
    return cases


def _name(command: str) -> str:
    if command == SCRIPT_4K:
        return f"{len(SCRIPT_4K.encode())} B script"
    return repr(command)


def _check_direct(guard: Any, tool_name: str, args: Args, refused: bool) -> None:
    out = ToolBeforeOutput(args=args)
    guard(ToolBeforeInput(tool_name=tool_name), out)
    if out.block != refused:
        raise RuntimeError(f"{type(guard).__name__} on {args!r}: block={out.block}")


def _check_remembered(guard: Any, tool_name: str, args: Args, remembered: bool) -> None:
    """The guard answers from its memory the second time (when ``remembered``), or
    judges again; either way, with the same verdict.

    Raises:
        RuntimeError: it does not.
    """
    base = CommandSafetyGuard if isinstance(guard, CommandSafetyGuard) else SecurityAudit
    module = sys.modules[base.__module__]
    name = "_analyze" if isinstance(guard, CommandSafetyGuard) else "normalize_path"
    original = getattr(module, name)
    calls: list[object] = []

    def counted(*a: Any, **kw: Any) -> Any:
        calls.append(a[0])
        return original(*a, **kw)

    setattr(module, name, counted)
    try:
        verdicts = []
        for _ in range(2):
            out = ToolBeforeOutput(args=args)
            guard(ToolBeforeInput(tool_name=tool_name), out)
            verdicts.append((out.block, out.block_reason))
    finally:
        setattr(module, name, original)
    if verdicts[0] != verdicts[1] or len(calls) != (1 if remembered else 2):
        raise RuntimeError(f"{type(guard).__name__} on {args!r}: judged {len(calls)} times")


def _check_pipe(pipe: Pipeline, tool_name: str, args: Args) -> None:
    result: ToolResult = asyncio.run(pipe.call_tool(tool_name, args, call=tool))
    if result.status != "ok" or result.output is not args:
        raise RuntimeError(f"{pipe!r} on {tool_name} {args!r} returned {result!r}")


def _check_policy(key: str, pipe: Pipeline, tool_name: str, args: Args, call: Any) -> None:
    async def twice() -> list[ToolResult]:
        async with pipe.turn() as turn:
            results = [await turn.call_tool(tool_name, args, call=call) for _ in range(2)]
        return results  # noqa: RET504 - after the block: a turn may absorb an AbortTurn

    statuses = [r.status for r in asyncio.run(twice())]
    expected = ["ok", "responded"] if key == "p_cache" else ["ok", "ok"]
    if statuses != expected:
        raise RuntimeError(f"{key}: statuses {statuses}, expected {expected}")


# -- reporting ----------------------------------------------------------------------------


@dataclass
class Row:
    case: str
    us_per_call: float | None
    measure: str = ""
    value_us: float | None = None
    target: str = ""
    result: str = ""


def analyse(cases: list[Case]) -> list[Row]:
    """Turn the medians (ns) into table rows (µs), with the targets checked.

    Raises:
        KeyError: a case the table needs was not measured.
    """
    t = {c.key: c.median / 1000 for c in cases}
    label = {c.key: c.label for c in cases}
    floor = t["floor"]
    target = f"< {TARGET_US:g} us"
    rows = [Row("floor: await tool(args)", floor)]
    directs: list[float] = []
    situs: list[float] = []
    for i in range(len(SHORT_COMMANDS)):
        key = f"cmd{i}"
        direct = t[f"d_{key}"]
        rows.append(
            Row(label[f"d_{key}"], direct, "direct", direct, target, verdict(direct < TARGET_US))
        )
        rows.append(Row(label[f"g_{key}"], t[f"g_{key}"]))
        rows.append(Row(label[f"b_{key}"], t[f"b_{key}"]))
        situ = t[f"g_{key}"] - t[f"b_{key}"]
        directs.append(direct)
        situs.append(situ)
        rows.append(
            Row("  guard in situ", None, "builtins - none", situ, target, verdict(situ < TARGET_US))
        )
        again = t[f"r_{key}"]
        rows.append(
            Row(
                label[f"r_{key}"],
                again,
                "direct",
                again,
                f"< {REPEAT_US:g} us",
                verdict(again < REPEAT_US),
            )
        )
        rows.append(Row(label[f"rg_{key}"], t[f"rg_{key}"]))
        rows.append(
            Row("  guard in situ", None, "builtins - none", t[f"rg_{key}"] - t[f"b_{key}"], "info")
        )
    rows += median_rows(directs, situs)
    rows.append(Row(label["d_refused"], t["d_refused"], "direct, refused", t["d_refused"], "info"))
    script = t["d_script"]
    size_kb = len(SCRIPT_4K.encode()) / 1024
    rows.append(Row(label["d_script"], script, "direct, per KB", script / size_kb, "info"))
    rows.append(Row(label["g_script"], t["g_script"]))
    rows.append(Row(label["b_script"], t["b_script"]))
    rows.append(
        Row("  guard in situ", None, "builtins - none", t["g_script"] - t["b_script"], "info")
    )
    rows.append(Row(label["r_script"], t["r_script"], "direct", t["r_script"], "info"))
    rows.append(Row(label["d_path"], t["d_path"], "direct", t["d_path"], "info"))
    rows.append(Row(label["g_path"], t["g_path"]))
    rows.append(Row(label["b_path"], t["b_path"]))
    rows.append(Row("  guard in situ", None, "builtins - none", t["g_path"] - t["b_path"], "info"))
    rows.append(Row(label["r_path"], t["r_path"], "direct", t["r_path"], "info"))
    rows.append(Row(label["rg_path"], t["rg_path"]))
    rows.append(Row("  guard in situ", None, "builtins - none", t["rg_path"] - t["b_path"], "info"))
    base = t["p_none"]
    rows.append(Row(f"turn.call_tool, {label['p_none']}", base))
    for key in ("p_filter", "p_rate", "p_loop", "p_redact", "p_cap", "p_cache"):
        rows.append(Row(f"  {label[key]}", t[key], "vs empty pipeline", t[key] - base, "info"))
    return rows


def median_rows(directs: list[float], situs: list[float]) -> list[Row]:
    """The summary rows: the median per new short command (:data:`SHORT_COMMANDS`),
    judged directly and in situ, against :data:`MEDIAN_US`."""
    target = f"<= {MEDIAN_US:g} us"
    direct, situ = statistics.median(directs), statistics.median(situs)
    return [
        Row(
            "median per new short command",
            direct,
            "direct",
            direct,
            target,
            verdict(direct <= MEDIAN_US),
        ),
        Row("  guard in situ", None, "builtins - none", situ, target, verdict(situ <= MEDIAN_US)),
    ]


COLUMNS = (
    Column("case", 46, "case"),
    Column("us/call", 9, "us_per_call", "9.2f"),
    Column("measure", 20, "measure", gap="  "),
    Column("value us", 9, "value_us", "9.2f"),
    Column("target", 9, "target", gap="  "),
    Column("result", 0, "result"),
)


def render(rows: list[Row]) -> str:
    return table(COLUMNS, rows)


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run every case, print the table (and write JSON if asked).

    Raises:
        RuntimeError: a guard or a benchmarked pipeline does not behave as expected.
        OSError: the JSON file cannot be written.
    """
    parser = option_parser(__doc__, clock=True)
    opts = parser.parse_args(argv)
    harness.use_clock(opts.clock)
    rounds, target_ms = run_settings(opts, 31, 20.0)
    info = print_header(
        "interpose bench: cost of the built-in guards",
        opts.quick,
        rounds,
        target_ms,
        "median us per call",
    )
    cases = build_cases()
    started = time.perf_counter()
    measure(cases, rounds, target_ms)
    rows = analyse(cases)
    print(render(rows))
    budget_rounds = 3 if opts.quick else 9
    print(f"\nthe analysis budget: {budget_rounds} rounds per input, one analysis each\n")
    budget_rows = measure_budget(budget_rounds)
    print(render_budget(budget_rows))
    print(f"\n(measured in {time.perf_counter() - started:.1f} s)")
    if opts.json:
        write_results(
            opts.json,
            info,
            rounds,
            target_ms,
            cases,
            rows,
            budget=[asdict(r) for r in budget_rows],
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
