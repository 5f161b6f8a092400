"""Per tool call: an OpenAI Agents SDK agent behind interpose, against the same agent
with the SDK's own no-op tool guardrails, in one run.

What it measures (microseconds per tool call; every case is a real ``Runner.run`` of
one agent, offline):

- the model: a ``Model`` of this script that answers the first call of a run with
  ``CALLS`` parallel calls of one async function tool (which returns a constant) and the
  second with a final message.  A run is two model calls and ``CALLS`` tool calls; a
  case's time per tool call is the run's time over ``CALLS``, so the run's own cost
  (two model calls, the SDK's bookkeeping) is spread over its tool calls.
- SDK, nothing added (floor): ``Runner.run(agent)``.
- SDK + k no-op guardrails, k = 1 and 10: the tool's ``tool_input_guardrails`` hold k
  sync guardrails that return ``ToolGuardrailFunctionOutput.allow()``.
- interpose + k interceptors, k = 0, 1 and 10: ``InterposeRunner(pipe).run(agent)``
  with the agent wrapped once (``interpose_agent``) and k sync ``tool.before``
  interceptors that do nothing (``Pipeline(builtins=False)``, nobody subscribed, no
  tracer provider).  Each run is also one turn: the message and params stages, and the
  llm stage around both model calls.

Ratios: interpose with k interceptors over the SDK with k guardrails, of the whole time
per tool call (the median over rounds of the ratio within a round) and of the time above
the floor (the ratio of the medians of the per-round differences from the floor).
Target: interpose's cost above the floor at most the guardrails' at k = 10.

Methodology (as in bench_mcp_proxy.py): every case is calibrated to a run count that
lasts about ``--target-ms``, warmed up, then each round runs every case once in a
shuffled order with the garbage collector disabled.  Times are the process's CPU time
(``time.process_time_ns``): everything here runs in one thread (the tool is async),
and on a shared machine the wall clock also counts the time other work holds the CPU.

Run it with ``python benchmarks/bench_openai_agents.py [--quick] [--json out.json]``
(needs the ``openai-agents`` extra, which the ``dev`` extra includes).
"""

from __future__ import annotations

import gc
import math
import random
import statistics
import time
from collections.abc import AsyncIterator
from typing import Any

from agents import (
    Agent,
    FunctionTool,
    Model,
    ModelResponse,
    RunConfig,
    Runner,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrailData,
    Usage,
    function_tool,
    set_tracing_disabled,
    tool_input_guardrail,
)
from agents.testing import assistant_message, function_call
from bench_tool_call import Case, Loop, child_bench_main

from interpose import Pipeline, ToolBeforeInput, ToolBeforeOutput
from interpose.adapters.openai_agents import InterposeRunner, interpose_agent

CALLS = 10  # parallel tool calls per run
DEPTHS = (1, 10)
TARGET = 1.0  # interpose above the floor / guardrails above the floor, at 10
CONFIG = RunConfig(tracing_disabled=True)

set_tracing_disabled(True)  # offline: no export of the SDK's own traces


class TwoStepModel(Model):
    """First call of a run: ``CALLS`` tool calls; the call after the tool outputs: done."""

    def __init__(self) -> None:
        self.first = [
            function_call("lookup", {"key": f"k{n}"}, call_id=f"c{n}") for n in range(CALLS)
        ]
        self.last = [assistant_message("done")]

    async def get_response(
        self, system_instructions: str | None, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        items = input
        answered = isinstance(items, list) and any(
            isinstance(item, dict) and item.get("type") == "function_call_output" for item in items
        )
        return ModelResponse(
            output=list(self.last if answered else self.first), usage=Usage(), response_id=None
        )

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the benchmark does not stream")


def make_tool(guardrails: int) -> FunctionTool:
    @function_tool
    async def lookup(key: str) -> str:
        """Look a key up."""
        return "value"

    @tool_input_guardrail
    def allow(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        return ToolGuardrailFunctionOutput.allow()

    if guardrails:
        lookup.tool_input_guardrails = [allow] * guardrails
    return lookup


def make_agent(guardrails: int = 0) -> Agent[Any]:
    return Agent(name="bench", model=TwoStepModel(), tools=[make_tool(guardrails)])


def noop(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    return None


def sdk_case(guardrails: int) -> Loop:
    agent = make_agent(guardrails)

    async def loop(n: int) -> int:
        run = Runner.run
        start = time.process_time_ns()
        for _ in range(n):
            await run(agent, "go", run_config=CONFIG)
        return time.process_time_ns() - start

    return loop


def interpose_case(interceptors: int) -> Loop:
    pipe = Pipeline(builtins=False)
    for k in range(interceptors):
        pipe.intercept("tool.before", id=f"noop-{k}")(noop)
    agent = interpose_agent(make_agent(), pipe)
    runner = InterposeRunner(pipe)

    async def loop(n: int) -> int:
        run = runner.run
        start = time.process_time_ns()
        for _ in range(n):
            await run(agent, "go", run_config=CONFIG)
        return time.process_time_ns() - start

    return loop


async def run_once(loop: Loop, n: int) -> int:
    gc.collect()
    gc.disable()
    try:
        return await loop(n)
    finally:
        gc.enable()


async def measure(cases: list[Case], rounds: int, target_ms: float) -> None:
    target_ns = int(target_ms * 1e6)
    for case in cases:
        n = 1
        while True:
            elapsed = await run_once(case.loop, n)
            if elapsed >= target_ns / 4 or n >= 1 << 12:
                break
            n *= 4
        case.n = max(1, int(n * target_ns / max(elapsed, 1)))
        await run_once(case.loop, case.n)  # warm-up
    order = list(cases)
    rng = random.Random(0)
    for _ in range(rounds):
        rng.shuffle(order)
        for case in order:
            # per tool call: a run makes CALLS of them
            case.samples.append(await run_once(case.loop, case.n) / (case.n * CALLS))


async def check() -> None:
    """Raises RuntimeError: a run does not end as the benchmark expects."""
    for loop in (sdk_case(1), interpose_case(1)):
        await loop(1)
    pipe = Pipeline(builtins=False)
    result = await InterposeRunner(pipe).run(make_agent(), "go", run_config=CONFIG)
    outputs = [i for i in result.new_items if i.type == "tool_call_output_item"]
    if result.final_output != "done" or len(outputs) != CALLS:
        raise RuntimeError(f"unexpected run: {result.final_output!r}, {len(outputs)} outputs")


async def bench(rounds: int, target_ms: float) -> dict[str, Any]:
    """Time every case.

    Raises:
        RuntimeError: a run does not end as expected.
    """
    await check()
    cases = [Case("floor", "SDK, nothing added (floor)", sdk_case(0))]
    cases += [Case(f"sdk{k}", f"SDK + {k} no-op guardrails", sdk_case(k)) for k in DEPTHS]
    cases += [
        Case(f"interpose{k}", f"interpose + {k} interceptors", interpose_case(k))
        for k in (0, *DEPTHS)
    ]
    await measure(cases, rounds, target_ms)
    t = {case.key: case for case in cases}

    def above(key: str, i: int) -> float:
        return t[key].samples[i] - t["floor"].samples[i]

    rows: list[dict[str, Any]] = []
    ratios: dict[str, float] = {}
    for k in DEPTHS:
        ours, theirs = t[f"interpose{k}"], t[f"sdk{k}"]
        whole = statistics.median(x / y for x, y in zip(ours.samples, theirs.samples, strict=True))
        # the differences are small against a run's cost: a ratio of their medians
        # (paired within each round) is steadier than a median of per-round ratios
        ours_above = statistics.median(above(ours.key, i) for i in range(rounds))
        theirs_above = statistics.median(above(theirs.key, i) for i in range(rounds))
        over = ours_above / theirs_above if theirs_above > 0 else math.inf
        ratios[f"above_ns{k}"], ratios[f"guardrails_above_ns{k}"] = ours_above, theirs_above
        ratios[f"whole{k}"], ratios[f"above{k}"] = whole, over
        rows.append(
            {
                "case": f"{k} interceptors vs {k} guardrails, per tool call",
                "ratio": whole,
                "target": "info",
                "result": "",
            }
        )
        rows.append(
            {
                "case": f"{k} vs {k}, above the floor",
                "ratio": over,
                "target": f"<= {TARGET}x" if k == 10 else "info",
                "result": ("PASS" if over <= TARGET else "MISS") if k == 10 else "",
            }
        )
    return {
        "calls_per_run": CALLS,
        "cases": {c.key: {"label": c.label, "n": c.n, "ns_per_call": c.median} for c in cases},
        "ratios": ratios,
        "rows": rows,
    }


def render(results: dict[str, Any]) -> str:
    floor = results["cases"]["floor"]["ns_per_call"]
    lines = [
        f"{CALLS} tool calls per run; time per tool call",
        f"{'case':<36} {'us/call':>8} {'above floor':>12}",
        "-" * 58,
    ]
    for case in results["cases"].values():
        ns = case["ns_per_call"]
        lines.append(f"{case['label']:<36} {ns / 1e3:8.1f} {(ns - floor) / 1e3:12.1f}")
    lines.append("")
    for row in results["rows"]:
        lines.append(
            f"{row['case']:<44} {row['ratio']:.2f}x   target {row['target']}   {row['result']}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the benchmark, print the table.

    Raises:
        RuntimeError: a run does not end as expected.
        OSError: the JSON file cannot be written.
    """
    return child_bench_main(
        __doc__,
        argv,
        {},
        "interpose bench: OpenAI Agents SDK adapter, per tool call",
        bench,
        render,
        rounds=25,
        target_ms=200.0,
        quick_target_ms=50.0,
    )


if __name__ == "__main__":
    main()
