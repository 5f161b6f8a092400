"""Quickstart: one pipeline with an interceptor, a middleware and an observer.

A fake ``exec`` tool stands in for a shell: nothing here runs a command or touches the
network.  Run it with ``python examples/quickstart.py``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from interpose import Event, Pipeline, ToolBeforeInput, ToolBeforeOutput, ToolContext
from interpose.bus.events import ToolExecEnd


def run_exec(args: dict[str, Any]) -> str:
    """The tool: pretend to run a shell command."""
    return f"ran {args['command']!r} (timeout {args['timeout']}s)"


# -- the pipeline -----------------------------------------------------------------------
pipe = Pipeline(builtins=False)  # builtins=False: only what this file registers


# -- an interceptor: tool.before on exec -------------------------------------------------
@pipe.intercept("tool.before", tools=r"^exec$", priority=10, id="default-timeout")
def default_timeout(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    out.args.setdefault("timeout", 30)  # modify: the tool sees the new args


@pipe.intercept("tool.before", tools=r"^exec$", priority=100, id="no-force-push")
def no_force_push(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    if "push --force" in out.args.get("command", ""):
        out.block = True  # block: the tool does not run
        out.block_reason = "force-pushing is not allowed"


# -- a middleware: wraps the whole tool stage ---------------------------------------------
@pipe.middleware("tool", id="timing")
async def timing(ctx: ToolContext, call_next: Callable[[], Awaitable[None]]) -> None:
    start = time.perf_counter()  # per-call state lives in locals, not on the middleware
    await call_next()
    assert ctx.result is not None
    elapsed_us = (time.perf_counter() - start) * 1e6
    print(f"timing: {ctx.tool_name} -> {ctx.result.status} in {elapsed_us:.0f} us")


# -- an observer: receives events from the bus ----------------------------------------------
finished: list[ToolExecEnd] = []


def on_tool_end(event: Event) -> None:
    if isinstance(event, ToolExecEnd):
        finished.append(event)


pipe.subscribe(on_tool_end, events={"tool_exec_end"})


async def main() -> None:
    async with pipe:  # starts the observers; drains their buffers on exit
        ok = await pipe.call_tool("bash", {"command": "ls"}, call=run_exec)
        print("result:", ok.status, ok.output)
        refused = await pipe.call_tool("bash", {"command": "git push --force"}, call=run_exec)
        print("result:", refused.status, refused.output)
    for event in finished:
        print(f"observer: {event.tool_name} {event.status} ran={list(event.interceptors)}")


if __name__ == "__main__":
    anyio.run(main)
