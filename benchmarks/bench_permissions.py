"""What permission rules add to a short shell command already parsed by the guard, in one run.

What it measures (ns per call; every case is an ``async def loop(n)`` run on one asyncio
event loop and timed inside the coroutine, with the shared ``harness.py``):

- floor: ``await tool(args)``, where ``async def tool(args): return args``;
- directly, as the pipeline calls its handlers: the command-safety guard on a short
  command it has judged before (``CommandSafetyGuard()``, which remembers; its analysis
  is the one the rules read, :func:`analysis_of`), and the same guard followed by the
  rules' ``tool.before`` handler (``PermissionPolicy.before``: the call read into a view,
  the analysis looked up, the rules judged).  The difference is what the rules add to a
  command the guard has parsed; target: at most 5 µs;
- in a pipeline: ``await pipe.call_tool("exec", {"command": ...}, call=tool)`` on
  ``Pipeline(tracing="off")`` (the built-in guards, as users get them) and on the same
  pipeline with the rules installed (``PermissionPolicy.install``: the ``tool.before``
  handler and the ``tool.approve`` one, which judges the call's final arguments again).
  The difference is what the rules add to the whole call; target: at most 5 µs;
- informational: where the in-pipeline cost goes -- the approval stage alone (the guards'
  pipeline with a ``tool.approve`` handler that has no opinion), and the rules' ``tool.before``
  handler alone (16 rules, no ``tool.approve`` handler); ``view_of`` alone (the view, the
  analysis looked up) and ``Permissions.judge`` alone on a view built once.

Each case runs with two rule sets: a typical ``[permissions]`` table (:data:`TYPICAL`,
16 rules: the docs' kind of allow list, a few asks and denies, path rules) and a large
settings file (:data:`LARGE`, 80 rules: the typical table and 64 more allowed commands,
the size of the real settings files in ``tests/permissions/data/settings``); the targets
are checked on both.  The short commands: ``git status`` (allowed), ``ls -la src`` (no
rule), ``cd src && git diff`` (two commands, both allowed).

Before timing, every case is checked once: the guard lets each command through, the
rules decide what they should (allow / no decision), the analysis the rules read is the
one the guard made (remembered, not parsed again), and each pipeline call returns ok.

Differences are computed in every round from that round's paired samples (the cases a
difference compares run one after the other) and reported as their median over rounds
(``harness.analyse``).

Run it with ``python benchmarks/bench_permissions.py [--quick] [--json out.json]``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import harness
from harness import Args, Case, Loop, Row, floor_case, tool

from interpose import Pipeline
from interpose.middleware.builtins import CommandSafetyGuard
from interpose.middleware.builtins.command_safety import analysis_of
from interpose.permissions.claude import parse_claude_rule
from interpose.permissions.engine import Permissions
from interpose.permissions.model import Decision, Rule
from interpose.permissions.policy import PermissionPolicy
from interpose.permissions.view import view_of
from interpose.pipeline.payloads import ApprovalRequest, ToolBeforeInput, ToolBeforeOutput

TARGET_NS = 5000.0
PROJECT = "/srv/project"
HOME = "/home/agent"

TYPICAL: dict[Decision, list[str]] = {
    "deny": ["Bash(git push --force:*)", "Bash(curl:*)", "Bash(sudo:*)", "Read(./.env)"],
    "ask": ["Bash(git push:*)", "Bash(rm:*)", "Bash(npm publish:*)"],
    "allow": [
        "Bash(git status:*)",
        "Bash(git diff:*)",
        "Bash(git log:*)",
        "Bash(ls *)",
        "Bash(cd:*)",
        "Bash(npm run test:*)",
        "Bash(npm run lint)",
        "Read(./src/**)",
        "WebFetch(domain:docs.python.org)",
    ],
}
LARGE: dict[Decision, list[str]] = {
    **TYPICAL,
    "allow": [*TYPICAL["allow"], *(f"Bash(tool{i} sub{i}:*)" for i in range(64))],
}
RULE_SETS = {"typical": TYPICAL, "large": LARGE}
COMMANDS = {"status": "git status", "ls": "ls -la src", "cd": "cd src && git diff"}
EXPECTED: dict[str, Decision | None] = {"status": "allow", "ls": "allow", "cd": "allow"}


def rules_of(table: Mapping[Decision, Sequence[str]]) -> list[Rule]:
    return [
        parse_claude_rule(
            text, decision, source="bench", base=Path(PROJECT), cwd=Path(PROJECT), home=Path(HOME)
        )
        for decision, texts in table.items()
        for text in texts
    ]


def policy_of(table: Mapping[Decision, Sequence[str]]) -> PermissionPolicy:
    return PermissionPolicy(Permissions(rules_of(table)), cwd=PROJECT, home=HOME)


# -- the timed loops -------------------------------------------------------------------------


def guard_case(guard: CommandSafetyGuard, args: Args) -> Loop:
    async def loop(n: int) -> int:
        g = guard
        inp = ToolBeforeInput(tool_name="exec", tool_call_id="c1")
        out = ToolBeforeOutput(args=args)
        start = time.perf_counter_ns()
        for _ in range(n):
            g(inp, out)
        return time.perf_counter_ns() - start

    return loop


def guard_and_rules_case(guard: CommandSafetyGuard, policy: PermissionPolicy, args: Args) -> Loop:
    async def loop(n: int) -> int:
        g, before = guard, policy.before
        inp = ToolBeforeInput(tool_name="exec", tool_call_id="c1")
        out = ToolBeforeOutput(args=args)
        start = time.perf_counter_ns()
        for _ in range(n):
            g(inp, out)
            before(inp, out)
        return time.perf_counter_ns() - start

    return loop


def view_case(args: Args) -> Loop:
    async def loop(n: int) -> int:
        view = view_of
        start = time.perf_counter_ns()
        for _ in range(n):
            view("exec", args, cwd=PROJECT, home=HOME)
        return time.perf_counter_ns() - start

    return loop


def judge_case(policy: PermissionPolicy, args: Args) -> Loop:
    async def loop(n: int) -> int:
        judge = policy.permissions.judge
        view = view_of("exec", args, cwd=PROJECT, home=HOME)
        start = time.perf_counter_ns()
        for _ in range(n):
            judge(view)
        return time.perf_counter_ns() - start

    return loop


def pipeline_case(pipe: Pipeline, args: Args) -> Loop:
    async def loop(n: int) -> int:
        call_tool = pipe.call_tool
        t = tool
        start = time.perf_counter_ns()
        for _ in range(n):
            await call_tool("exec", args, call=t)
        return time.perf_counter_ns() - start

    return loop


# -- the cases, checked before they are timed ------------------------------------------------


def _check(policy: PermissionPolicy, guard: CommandSafetyGuard, key: str, args: Args) -> None:
    """The guard lets the command through, the rules decide what they should, and the
    analysis they read is the guard's (remembered: the same object both times).

    Raises:
        RuntimeError: one of these does not hold.
    """
    out = ToolBeforeOutput(args=args)
    guard(ToolBeforeInput(tool_name="exec", tool_call_id="c1"), out)
    if out.block:
        raise RuntimeError(f"the guard refused {args!r}: {out.block_reason}")
    if analysis_of(args["command"]) is not analysis_of(args["command"]):
        raise RuntimeError(f"the analysis of {args!r} is not remembered")
    decision = policy.judge("exec", args).decision
    if decision != EXPECTED[key]:
        raise RuntimeError(f"the rules decided {decision} on {args!r}, not {EXPECTED[key]}")


async def _check_pipe(pipe: Pipeline, args: Args) -> None:
    result = await pipe.call_tool("exec", args, call=tool)
    if result.status != "ok":
        raise RuntimeError(f"{args!r} through the pipeline: {result.status} {result.output!r}")


def _no_opinion(request: ApprovalRequest) -> None:
    """A ``tool.approve`` handler with no opinion: what the approval stage costs alone."""


def build_cases() -> list[Case]:
    """Every case of the run, checked once.

    Raises:
        RuntimeError: a guard, the rules or a pipeline does not behave as assumed.
    """
    import asyncio

    guard = CommandSafetyGuard()
    guarded = Pipeline(tracing="off")
    approving = Pipeline(tracing="off")
    approving.approver(id="noop")(_no_opinion)
    cases = [Case("floor", "floor: await tool(args)", floor_case({"command": "git status"}))]
    for key, command in COMMANDS.items():
        args: Args = {"command": command}
        cases.append(Case(f"g_{key}", f"guard, {command!r}", guard_case(guard, args)))
        asyncio.run(_check_pipe(guarded, args))
        cases.append(
            Case(f"p_{key}", f"call_tool, guards, {command!r}", pipeline_case(guarded, args))
        )
        asyncio.run(_check_pipe(approving, args))
        cases.append(
            Case(
                f"a_{key}",
                f"call_tool, guards + no-op approver, {command!r}",
                pipeline_case(approving, args),
            )
        )
        before_only = Pipeline(tracing="off")
        before_only.registry.add(policy_of(TYPICAL).interceptors()[0])
        asyncio.run(_check_pipe(before_only, args))
        cases.append(
            Case(
                f"b_{key}",
                f"call_tool, guards + rules' tool.before (16), {command!r}",
                pipeline_case(before_only, args),
            )
        )
        for name, table in RULE_SETS.items():
            policy = policy_of(table)
            _check(policy, guard, key, args)
            ruled = Pipeline(tracing="off")
            policy_of(table).install(ruled)
            asyncio.run(_check_pipe(ruled, args))
            size = sum(len(t) for t in table.values())
            cases += [
                Case(
                    f"gr_{name}_{key}",
                    f"guard + rules ({size}), {command!r}",
                    guard_and_rules_case(guard, policy, args),
                ),
                Case(
                    f"pr_{name}_{key}",
                    f"call_tool, guards + rules ({size}), {command!r}",
                    pipeline_case(ruled, args),
                ),
                Case(
                    f"j_{name}_{key}",
                    f"judge() ({size} rules), {command!r}",
                    judge_case(policy, args),
                ),
            ]
        cases.append(Case(f"v_{key}", f"view_of, {command!r}", view_case(args)))
    return cases


def group(case: Case) -> int:
    """The cases a difference compares run one after the other: one group per command."""
    for i, key in enumerate(COMMANDS):
        if case.key.endswith(f"_{key}"):
            return i + 1
    return 0


# -- the table ---------------------------------------------------------------------------


def rows_of(t: Mapping[str, float], cases: Sequence[Case]) -> list[Row]:
    """The rows of one set of times per case (medians, or one round's samples).

    Raises:
        KeyError: a case the table needs was not measured.
    """
    label = {c.key: c.label for c in cases}
    floor = t["floor"]
    target = f"<= {TARGET_NS:g} ns"
    rows = [Row(label["floor"], floor, 0.0)]
    for key in COMMANDS:
        guard, piped = t[f"g_{key}"], t[f"p_{key}"]
        rows.append(Row(label[f"g_{key}"], guard, guard - floor))
        for name in RULE_SETS:
            both = t[f"gr_{name}_{key}"]
            rows.append(
                Row(
                    label[f"gr_{name}_{key}"],
                    both,
                    both - floor,
                    "rules added to the guard",
                    both - guard,
                    None,
                    target,
                )
            )
        rows.append(Row(label[f"p_{key}"], piped, piped - floor))
        for name in RULE_SETS:
            ruled = t[f"pr_{name}_{key}"]
            rows.append(
                Row(
                    label[f"pr_{name}_{key}"],
                    ruled,
                    ruled - floor,
                    "rules added to the call",
                    ruled - piped,
                    None,
                    target,
                )
            )
        approving, before_only = t[f"a_{key}"], t[f"b_{key}"]
        rows.append(
            Row(
                label[f"a_{key}"],
                approving,
                approving - floor,
                "the approval stage alone",
                approving - piped,
                None,
                "info",
            )
        )
        rows.append(
            Row(
                label[f"b_{key}"],
                before_only,
                before_only - floor,
                "tool.before handler added",
                before_only - piped,
                None,
                "info",
            )
        )
        view = t[f"v_{key}"]
        rows.append(
            Row(label[f"v_{key}"], view, view - floor, "the view alone", view, None, "info")
        )
        for name in RULE_SETS:
            judged = t[f"j_{name}_{key}"]
            rows.append(
                Row(
                    label[f"j_{name}_{key}"],
                    judged,
                    judged - floor,
                    "judge() alone",
                    judged,
                    None,
                    "info",
                )
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run every case, print the table and the verdict (and write JSON
    if asked).

    Raises:
        RuntimeError: a guard, the rules or a pipeline does not behave as expected.
        OSError: the JSON file cannot be written.
    """
    opts = harness.option_parser(__doc__).parse_args(argv)
    rounds, target_ms = harness.run_settings(opts, 31, 20.0)
    info = harness.print_header(
        "interpose bench: what permission rules add to a short command",
        opts.quick,
        rounds,
        target_ms,
        "median ns per call",
    )
    cases = build_cases()
    started = time.perf_counter()
    harness.measure(cases, rounds, target_ms, group=group)
    rows = harness.analyse(cases, rows_of)
    print(harness.render(rows))
    checked = [r for r in rows if r.result]
    missed = [r for r in checked if r.result != "PASS"]
    print(
        f"\nverdict: {len(checked) - len(missed)} of {len(checked)} targets met "
        f"(rules add at most {TARGET_NS / 1000:g} us to a short command the guard parsed)"
    )
    print(f"(measured in {time.perf_counter() - started:.1f} s)")
    if opts.json:
        harness.write_results(opts.json, info, rounds, target_ms, cases, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
