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
  pipeline with a ``tool.approve`` handler that has no opinion), and the rules'
  ``tool.before`` handler alone (16 rules, no ``tool.approve`` handler); ``view_of`` alone
  (the view, the analysis looked up) and ``Permissions.judge`` alone on a view built once.

Each case runs with three rule sets: a typical ``[permissions]`` table (:data:`TYPICAL`,
16 rules: the docs' kind of allow list, a few asks and denies, path rules), a large
settings file (:data:`LARGE`, 80 rules: the typical table and 64 more allowed commands,
the size of the real settings files in ``tests/permissions/data/settings``) and the
typical table without its ask rules (:data:`NO_ASK`, 13 rules: the policy then needs no
``tool.approve`` handler); and twice:
*repeated* (the rules remember their judgement of a command they have seen, as they do
for an agent repeating itself) and *first time* (that memory emptied before every call,
so the rules judge the command afresh: the cost of a command seen for the first time,
whose analysis the guard has just made).  The targets are checked on all six.  The
short commands: ``git status``, ``ls -la src``, ``cd src && git diff`` (two commands),
all three allowed by the rules.

Before timing, every case is checked once: the guard lets each command through, the
rules allow it, the analysis the rules read is the one the guard made (remembered, not
parsed again), and each pipeline call returns ok.

Differences are computed in every round from that round's paired samples (the cases a
difference compares run one after the other) and reported as their median over rounds
(``harness.analyse``).

Run it with ``python benchmarks/bench_permissions.py [--quick] [--clock cpu] [--json out.json]``
(``--clock cpu``: the loops read the process's CPU time, for a machine shared with other work).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
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
NO_ASK: dict[Decision, list[str]] = {"deny": TYPICAL["deny"], "allow": TYPICAL["allow"]}
RULE_SETS = {"typical": TYPICAL, "large": LARGE, "no-ask": NO_ASK}
# the rules' memory of their judgements: kept (repeated) or emptied before every call
MEMORY = {"rep": "repeated", "new": "first time"}
COMMANDS = {"status": "git status", "ls": "ls -la src", "cd": "cd src && git diff"}

Forget = Callable[[], None] | None


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


def forgetting(policy: PermissionPolicy, memory: str) -> Forget:
    """What empties the rules' memory of their judgements before each call ("new"), or
    None ("rep").  The memory is the engine's own (``Permissions`` keeps it), reached
    here only to measure the work it saves; emptying it costs tens of ns, counted in."""
    return policy.permissions._judged.clear if memory == "new" else None


# -- the timed loops -------------------------------------------------------------------------


def guard_case(guard: CommandSafetyGuard, args: Args) -> Loop:
    async def loop(n: int) -> int:
        g = guard
        inp = ToolBeforeInput(tool_name="exec", tool_call_id="c1")
        out = ToolBeforeOutput(args=args)
        start = harness.clock()
        for _ in range(n):
            g(inp, out)
        return harness.clock() - start

    return loop


def guard_and_rules_case(
    guard: CommandSafetyGuard, policy: PermissionPolicy, args: Args, forget: Forget
) -> Loop:
    async def loop(n: int) -> int:
        g, before = guard, policy.before
        inp = ToolBeforeInput(tool_name="exec", tool_call_id="c1")
        out = ToolBeforeOutput(args=args)
        start = harness.clock()
        if forget is None:
            for _ in range(n):
                g(inp, out)
                before(inp, out)
        else:
            for _ in range(n):
                forget()
                g(inp, out)
                before(inp, out)
        return harness.clock() - start

    return loop


def view_case(args: Args) -> Loop:
    async def loop(n: int) -> int:
        view = view_of
        start = harness.clock()
        for _ in range(n):
            view("exec", args, cwd=PROJECT, home=HOME)
        return harness.clock() - start

    return loop


def judge_case(policy: PermissionPolicy, args: Args, forget: Forget) -> Loop:
    async def loop(n: int) -> int:
        judge = policy.permissions.judge
        view = view_of("exec", args, cwd=PROJECT, home=HOME)
        start = harness.clock()
        if forget is None:
            for _ in range(n):
                judge(view)
        else:
            for _ in range(n):
                forget()
                judge(view)
        return harness.clock() - start

    return loop


def pipeline_case(pipe: Pipeline, args: Args, forget: Forget = None) -> Loop:
    async def loop(n: int) -> int:
        call_tool = pipe.call_tool
        t = tool
        start = harness.clock()
        if forget is None:
            for _ in range(n):
                await call_tool("exec", args, call=t)
        else:
            for _ in range(n):
                forget()
                await call_tool("exec", args, call=t)
        return harness.clock() - start

    return loop


# -- the cases, checked before they are timed ------------------------------------------------


def _check(policy: PermissionPolicy, guard: CommandSafetyGuard, args: Args) -> None:
    """The guard lets the command through, the rules allow it, and the analysis they
    read is the guard's (remembered: the same object both times).

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
    if decision != "allow":
        raise RuntimeError(f"the rules decided {decision} on {args!r}, not allow")


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
    guard = CommandSafetyGuard()
    guarded = Pipeline(tracing="off")
    approving = Pipeline(tracing="off")
    approving.approver(id="noop")(_no_opinion)
    before_only = Pipeline(tracing="off")
    before_only.registry.add(policy_of(TYPICAL).interceptors()[0])
    cases = [Case("floor", "floor: await tool(args)", floor_case({"command": "git status"}))]
    for key, command in COMMANDS.items():
        args: Args = {"command": command}
        for pipe in (guarded, approving, before_only):
            asyncio.run(_check_pipe(pipe, args))
        cases += [
            Case(f"g_{key}", f"guard, {command!r}", guard_case(guard, args)),
            Case(f"p_{key}", f"call_tool, guards, {command!r}", pipeline_case(guarded, args)),
            Case(
                f"a_{key}",
                f"call_tool, guards + no-op approver, {command!r}",
                pipeline_case(approving, args),
            ),
            Case(
                f"b_{key}",
                f"call_tool, guards + rules' tool.before (16), {command!r}",
                pipeline_case(before_only, args),
            ),
            Case(f"v_{key}", f"view_of, {command!r}", view_case(args)),
        ]
        for name, table in RULE_SETS.items():
            size = sum(len(t) for t in table.values())
            for memory, said in MEMORY.items():
                policy = policy_of(table)
                _check(policy, guard, args)
                installed = policy_of(table)
                ruled = Pipeline(tracing="off")
                installed.install(ruled)
                asyncio.run(_check_pipe(ruled, args))
                tag = f"{name}_{memory}_{key}"
                cases += [
                    Case(
                        f"gr_{tag}",
                        f"guard + rules ({size}, {said}), {command!r}",
                        guard_and_rules_case(guard, policy, args, forgetting(policy, memory)),
                    ),
                    Case(
                        f"pr_{tag}",
                        f"call_tool, guards + rules ({size}, {said}), {command!r}",
                        pipeline_case(ruled, args, forgetting(installed, memory)),
                    ),
                    Case(
                        f"j_{tag}",
                        f"judge() ({size} rules, {said}), {command!r}",
                        judge_case(policy, args, forgetting(policy, memory)),
                    ),
                ]
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

    def row(key: str, measure: str = "", value: float | None = None, goal: str = "") -> Row:
        return Row(label[key], t[key], t[key] - floor, measure, value, None, goal)

    rows = [Row(label["floor"], floor, 0.0)]
    for key in COMMANDS:
        guard, piped = t[f"g_{key}"], t[f"p_{key}"]
        tags = [f"{name}_{memory}_{key}" for name in RULE_SETS for memory in MEMORY]
        rows.append(row(f"g_{key}"))
        for tag in tags:
            rows.append(
                row(f"gr_{tag}", "rules added to the guard", t[f"gr_{tag}"] - guard, target)
            )
        rows.append(row(f"p_{key}"))
        for tag in tags:
            rows.append(row(f"pr_{tag}", "rules added to the call", t[f"pr_{tag}"] - piped, target))
        rows.append(row(f"a_{key}", "the approval stage alone", t[f"a_{key}"] - piped, "info"))
        rows.append(row(f"b_{key}", "tool.before handler added", t[f"b_{key}"] - piped, "info"))
        rows.append(row(f"v_{key}", "the view alone", t[f"v_{key}"], "info"))
        for tag in tags:
            rows.append(row(f"j_{tag}", "judge() alone", t[f"j_{tag}"], "info"))
    return rows


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run every case, print the table and the verdict (and write JSON
    if asked).

    Raises:
        RuntimeError: a guard, the rules or a pipeline does not behave as expected.
        OSError: the JSON file cannot be written.
    """
    return harness.table_bench(
        __doc__,
        argv,
        "interpose bench: what permission rules add to a short command",
        build_cases,
        rows_of,
        rounds=31,
        targets=f"rules add at most {TARGET_NS / 1000:g} us to a short command the guard parsed",
        group=group,
    )


if __name__ == "__main__":
    raise SystemExit(main())
