"""Middleware: the onion around a stage.

Code before ``await call_next()`` runs on the way in (highest priority first), code
after it on the way out (in reverse).  The interceptors and the tool run in the middle.
A layer that does not call ``call_next()`` short-circuits and must set ``ctx.result``.
Per-call state goes into locals or ``ctx.state``, never onto the middleware.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from interpose import (
    Pipeline,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
    ToolContext,
    ToolResult,
)

CallNext = Callable[[], Awaitable[None]]
pipe = Pipeline(builtins=False)


async def search(args: dict[str, Any]) -> list[str]:
    """The tool: a fake async memory search."""
    await anyio.sleep(0.01)
    print(f"        the tool runs with {args}")
    return [f"note about {args['query']}"]


@pipe.middleware("tool", priority=100, id="timing")
async def timing(ctx: ToolContext, call_next: CallNext) -> None:
    start = time.perf_counter_ns()
    print(f"timing in: {ctx.tool_name} call_id={ctx.call_id}")
    await call_next()
    assert ctx.result is not None
    ms = (time.perf_counter_ns() - start) / 1e6
    print(f"timing out: {ctx.result.status}, {ms:.1f} ms (tool itself {ctx.state['tool_ms']:.1f})")


@pipe.middleware("tool", priority=50, id="cache")
async def cache(ctx: ToolContext, call_next: CallNext) -> None:
    print("  cache in")
    if ctx.args.get("query") == "cached":
        ctx.result = ToolResult(output=["from the cache"], status="responded")
        ctx.state["tool_ms"] = 0.0
        print("  cache out: short-circuit, nothing inside runs")
        return  # no call_next(): ctx.result must be set
    await call_next()
    print("  cache out")


@pipe.middleware("tool", priority=10, id="measure-tool")
async def measure_tool(ctx: ToolContext, call_next: CallNext) -> None:
    print("    measure-tool in: wraps ctx.call")
    inner = ctx.call

    async def timed(args: dict[str, Any]) -> Any:
        start = time.perf_counter_ns()
        try:
            result = inner(args)
            return await result if inspect.isawaitable(result) else result
        finally:
            ctx.state["tool_ms"] = (time.perf_counter_ns() - start) / 1e6

    ctx.call = timed
    ctx.args["limit"] = 5  # the interceptors and the tool see this
    await call_next()
    print("    measure-tool out")


@pipe.intercept("tool.before", tools="group:memory", id="before")
def before(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    print(f"      tool.before sees {out.args}")


@pipe.intercept("tool.after", tools="group:memory", id="after")
def after(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
    print(f"      tool.after sees {out.result.output}")


async def main() -> None:
    result = await pipe.call_tool("memory_search", {"query": "deploys"}, call=search)
    print("result:", result.output)
    print()
    result = await pipe.call_tool("memory_search", {"query": "cached"}, call=search)
    print("result:", result.output)


if __name__ == "__main__":
    anyio.run(main)
