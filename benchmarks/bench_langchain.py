"""Per-tool-call cost of the LangChain v1 adapter against LangChain's own middleware, in one run.

What it measures (microseconds per tool call).  Every case is the same real
``create_agent`` agent run with ``await agent.ainvoke(...)`` on one asyncio event loop: a
scripted fake chat model (langchain-core's ``FakeMessagesListChatModel`` with
``bind_tools`` returning itself) asks for ``CALLS`` = 10 calls of one tool at once, the
tool (``@tool def echo(text: str) -> str: return text``) runs them, and the model answers.
The time of one invocation divided by ``CALLS`` is the time per tool call; it includes the
agent's two model calls and its graph steps, shared by the calls.

- bare agent (floor): no middleware;
- LangChain, 1 and 10 middlewares: that many no-op ``AgentMiddleware`` instances whose
  ``awrap_tool_call(request, handler)`` is ``return await handler(request)`` (each a
  distinct name, as ``create_agent`` requires): what N policies cost written as LangChain
  middleware;
- interpose, 1 and 10 interceptors: one ``InterposeMiddleware(pipe)`` whose pipeline
  (``Pipeline(builtins=False, tracing="off")``, no observers) holds that many sync
  ``tool.before`` interceptors ``def h(inp, out): pass`` on the tool: the same N policies
  written for interpose.  The adapter also opens a turn per invocation and runs the
  message, params and llm stages, which the LangChain cases do not do: that cost is in
  its numbers.

Reported: the time per tool call of each case, the overhead above the floor per tool
call, and the paired ratios interpose / LangChain of the time per tool call and of the
overhead, for 1 and for 10 policies.  Target: with 10 policies, the adapter's overhead is
at most the overhead of 10 LangChain middlewares (ratio <= 1.0); with 1 the ratio is
informational (one LangChain middleware does less than the adapter's turn).

Methodology (as in bench_mcp_proxy.py): every case is calibrated to a number of
invocations whose run lasts about ``--target-ms``, warmed up, then each round runs every
case once in a shuffled order with the garbage collector disabled; a case's time is the
median over rounds and a ratio is the median of the per-round ratios (both cases
measured in the same round).

Run it with ``python benchmarks/bench_langchain.py [--quick] [--json out.json]`` (needs
the ``langchain`` extra, which the ``dev`` extra includes).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from harness import (
    Case,
    Loop,
    child_bench_main,
    paired_ratio,
    ratio_lines,
    run_once_async,
    time_rounds,
)
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from interpose import Pipeline, ToolBeforeInput, ToolBeforeOutput
from interpose.adapters.langchain import InterposeMiddleware

CALLS = 10
POLICIES = (1, 10)
TARGET_10 = 1.0
INPUT: Any = {"messages": [HumanMessage("echo ten times")]}


class ScriptedModel(FakeMessagesListChatModel):
    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        return self


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


def script() -> list[BaseMessage]:
    asks = AIMessage(
        content="",
        tool_calls=[
            {"name": "echo", "args": {"text": f"t{i}"}, "id": f"c{i}", "type": "tool_call"}
            for i in range(CALLS)
        ],
    )
    return [asks, AIMessage("done")]  # the fake model cycles through these


class NoOp(AgentMiddleware):
    """A pass-through ``wrap_tool_call`` layer, the cheapest LangChain middleware."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index

    @property
    def name(self) -> str:
        return f"noop{self.index}"

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        return handler(request)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        return await handler(request)


def interpose_middleware(policies: int) -> InterposeMiddleware:
    pipe = Pipeline(builtins=False, tracing="off")
    pipe.register_tool("echo")
    for i in range(policies):

        def h(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
            pass

        pipe.intercept("tool.before", tools="echo", id=f"noop{i}")(h)
    return InterposeMiddleware(pipe)


def agent_loop(middleware: list[Any]) -> Loop:
    agent = create_agent(ScriptedModel(responses=script()), [echo], middleware=middleware)

    async def loop(n: int) -> int:
        invoke = agent.ainvoke
        start = time.perf_counter_ns()
        for _ in range(n):
            await invoke(INPUT)
        return time.perf_counter_ns() - start

    return loop


async def check(middleware: list[Any]) -> None:
    """Raises RuntimeError: the agent does not run the ten calls and answer."""
    agent = create_agent(ScriptedModel(responses=script()), [echo], middleware=middleware)
    state = await agent.ainvoke(INPUT)
    echoed = sorted(str(m.content) for m in state["messages"] if isinstance(m, ToolMessage))
    if echoed != sorted(f"t{i}" for i in range(CALLS)) or state["messages"][-1].content != "done":
        raise RuntimeError(f"unexpected run: {state['messages']!r}")


async def measure(cases: list[Case], rounds: int, target_ms: float) -> None:
    target_ns = int(target_ms * 1e6)
    for case in cases:
        elapsed = await run_once_async(case.loop, 1)
        case.n = max(1, int(target_ns / max(elapsed, 1)))
        await run_once_async(case.loop, case.n)  # warm-up
    await time_rounds(cases, rounds, CALLS)


def paired(a: Case, b: Case, floor: Case | None = None) -> float:
    """Median over rounds of a over b (minus the floor of the same round, if given)."""
    if floor is None:
        return paired_ratio(a, b)
    return statistics.median(
        (x - f) / max(y - f, 1.0)
        for x, y, f in zip(a.samples, b.samples, floor.samples, strict=True)
    )


async def bench(rounds: int, target_ms: float) -> dict[str, Any]:
    """Check every agent, time every case.

    Raises:
        RuntimeError: an agent does not run its calls as expected.
    """
    stacks: dict[str, list[Any]] = {"bare": []}
    for n in POLICIES:
        stacks[f"lc{n}"] = [NoOp(i) for i in range(n)]
        stacks[f"ip{n}"] = [interpose_middleware(n)]
    for middleware in stacks.values():
        await check(middleware)
    labels = {"bare": "bare agent (floor)"}
    for n in POLICIES:
        labels[f"lc{n}"] = f"LangChain, {n} no-op middleware{'s' if n > 1 else ''}"
        labels[f"ip{n}"] = f"interpose, {n} interceptor{'s' if n > 1 else ''}"
    cases = [Case(key, labels[key], agent_loop(stacks[key])) for key in stacks]
    await measure(cases, rounds, target_ms)
    t = {case.key: case for case in cases}
    floor = t["bare"]
    ratios: dict[str, float] = {}
    rows: list[dict[str, Any]] = []
    for n in POLICIES:
        ip, lc = t[f"ip{n}"], t[f"lc{n}"]
        ratios[f"time{n}"] = paired(ip, lc)
        ratios[f"overhead{n}"] = paired(ip, lc, floor)
        rows.append(
            {"case": f"{n} policies: time per call, interpose / LangChain"}
            | {"ratio": ratios[f"time{n}"], "target": "info", "result": ""}
        )
        target = n == 10
        rows.append(
            {
                "case": f"{n} policies: overhead per call, interpose / LangChain",
                "ratio": ratios[f"overhead{n}"],
                "target": f"<= {TARGET_10}x" if target else "info",
                "result": ("PASS" if ratios[f"overhead{n}"] <= TARGET_10 else "MISS")
                if target
                else "",
            }
        )
    return {
        "calls_per_invocation": CALLS,
        "cases": {
            c.key: {
                "label": c.label,
                "n": c.n,
                "us_per_tool_call": c.median / 1e3,
                "overhead_us": (c.median - floor.median) / 1e3,
            }
            for c in cases
        },
        "ratios": ratios,
        "rows": rows,
    }


def render(results: dict[str, Any]) -> str:
    lines = [
        f"{CALLS} parallel tool calls per invocation; per tool call:",
        f"{'case':<36} {'us/call':>8} {'+floor us':>10}",
        "-" * 56,
    ]
    for case in results["cases"].values():
        lines.append(
            f"{case['label']:<36} {case['us_per_tool_call']:8.1f} {case['overhead_us']:10.1f}"
        )
    lines.append("")
    lines += ratio_lines(results["rows"], 56)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the benchmark, print the table.

    Raises:
        RuntimeError: an agent does not run as expected.
        OSError: the JSON file cannot be written.
    """
    return child_bench_main(
        __doc__,
        argv,
        {},
        "interpose bench: the LangChain adapter per tool call",
        bench,
        render,
        rounds=15,
        target_ms=300.0,
        quick_target_ms=50.0,
    )


if __name__ == "__main__":
    main()
