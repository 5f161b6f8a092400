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

Ratios: interpose with k interceptors over the SDK with k guardrails, per tool call (the
median over rounds of the ratio within a round).  Target: at most 1.1x at k = 10, i.e.
putting interpose in front of the agent costs at most a tenth more per tool call than
the SDK's own guardrails.  Also shown: each case's time above the floor (the median of
the per-round differences; the guardrails' is within the noise of zero).

Methodology: every case is warmed up; a round runs every case once in a shuffled order,
again and again until each case has run for about ``--target-ms``, with the garbage
collector disabled, and adds up each case's runs (interleaved run by run, so that every
case sees the same load of a shared machine); a case's time is the median over
rounds.  Times are the process's CPU time
(``time.process_time_ns``): everything here runs in one thread (the tool is async),
and on a shared machine the wall clock also counts the time other work holds the CPU.

Run it with ``python benchmarks/bench_openai_agents.py [--quick] [--json out.json]``
(needs the ``openai-agents`` extra, which the ``dev`` extra includes).
"""

from __future__ import annotations

import gc
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
from harness import Case, Loop, child_bench_main, ratio_lines

from interpose import Pipeline, ToolBeforeInput, ToolBeforeOutput
from interpose.adapters.openai_agents import InterposeRunner, interpose_agent

CALLS = 10  # parallel tool calls per run
DEPTHS = (1, 10)
TARGET = 1.1  # per tool call: interpose + 10 interceptors / the SDK + 10 guardrails
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


async def measure(cases: list[Case], rounds: int, target_ms: float) -> None:
    """Time every case, interleaved run by run.

    A run lasts milliseconds, and what the cases differ by is a few percent of it: on a
    shared machine, timing each case for a whole round would compare moments of
    different load.  So each round runs every case once in a shuffled order, ``n``
    times over, and adds up each case's runs: every case sees the same load.
    """
    for case in cases:
        await case.loop(2)  # warm-up
    first = min([await cases[0].loop(1) for _ in range(3)])
    n = max(1, int(target_ms * 1e6 / max(first, 1)))
    for case in cases:
        case.n = n
    order = list(cases)
    rng = random.Random(0)
    for _ in range(rounds):
        spent = dict.fromkeys((case.key for case in cases), 0)
        gc.collect()
        gc.disable()
        try:
            for _ in range(n):
                rng.shuffle(order)
                for case in order:
                    spent[case.key] += await case.loop(1)
        finally:
            gc.enable()
        for case in cases:
            # per tool call: a run makes CALLS of them
            case.samples.append(spent[case.key] / (n * CALLS))


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

    def added(key: str) -> float:
        """The median over rounds of ``key``'s time above the floor's in the round."""
        return statistics.median(
            x - y for x, y in zip(t[key].samples, t["floor"].samples, strict=True)
        )

    rows: list[dict[str, Any]] = []
    ratios: dict[str, float] = {}
    added_ns = {key: added(key) for key in t if key != "floor"}
    for k in DEPTHS:
        ours, theirs = t[f"interpose{k}"], t[f"sdk{k}"]
        whole = statistics.median(x / y for x, y in zip(ours.samples, theirs.samples, strict=True))
        ratios[f"interpose{k}_vs_sdk{k}"] = whole
        rows.append(
            {
                "case": f"interpose + {k} vs SDK + {k} guardrails",
                "ratio": whole,
                "target": f"<= {TARGET}x" if k == 10 else "info",
                "result": ("PASS" if whole <= TARGET else "MISS") if k == 10 else "",
            }
        )
    return {
        "calls_per_run": CALLS,
        "cases": {c.key: {"label": c.label, "n": c.n, "ns_per_call": c.median} for c in cases},
        "ratios": ratios,
        "added_ns": added_ns,
        "rows": rows,
    }


def render(results: dict[str, Any]) -> str:
    lines = [
        f"{CALLS} tool calls per run; CPU time per tool call; added: the median of the",
        "per-round differences from the floor",
        f"{'case':<36} {'us/call':>8} {'added (us)':>11}",
        "-" * 57,
    ]
    for key, case in results["cases"].items():
        ns = case["ns_per_call"]
        extra = results["added_ns"].get(key)
        shown = f"{extra / 1e3:11.1f}" if extra is not None else f"{'':>11}"
        lines.append(f"{case['label']:<36} {ns / 1e3:8.1f} {shown}")
    lines.append("")
    lines += ratio_lines(results["rows"], 44)
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
