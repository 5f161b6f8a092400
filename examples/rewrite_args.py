"""Rewrite tool arguments with interceptors, and see in which order they run.

Higher priority runs first; equal priorities run in registration order.  Each
interceptor mutates ``out.args`` in place, so the next one (and the tool) sees the
change.  Sync and async handlers mix freely.
"""

from __future__ import annotations

import posixpath
from typing import Any

import anyio
import anyio.lowlevel

from interpose import Interceptor, Pipeline, ToolBeforeInput, ToolBeforeOutput

pipe = Pipeline(builtins=False)


def read_file(args: dict[str, Any]) -> str:
    """The tool: a fake file read that reports what it was asked for."""
    return f"<contents of {args['path']} from line {args['offset']}>"


# priority 100+: security gates see the arguments as the model sent them
@pipe.intercept("tool.before", tools="group:fs", priority=100, id="gate")
def gate(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    print(f"  gate       (100) sees {out.args}")


# 10..99: argument transforms
@pipe.intercept("tool.before", tools="group:fs", priority=50, id="normalize-path")
def normalize_path(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    out.args["path"] = posixpath.normpath(posixpath.join("/workspace", out.args["path"]))
    print(f"  normalize  ( 50) -> {out.args}")


@pipe.intercept("tool.before", tools=["read"], priority=10, id="default-offset")
async def default_offset(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    await anyio.lowlevel.checkpoint()  # an async handler is awaited in the same task
    out.args.setdefault("offset", 0)
    print(f"  offset     ( 10) -> {out.args}")


# the same priority twice: registration order decides
@pipe.intercept("tool.before", tools=["read"], priority=10, id="tag")
def tag(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    out.args["requested_by"] = inp.agent_id
    print(f"  tag        ( 10) -> {out.args}")


# negative: logging and auditing, sees the final state
def audit(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    print(f"  audit      (-10) final {inp.tool_name} args {out.args}")


pipe.registry.add(
    Interceptor(id="audit", hook="tool.before", handler=audit, priority=-10, tool_matcher=".*")
)


async def main() -> None:
    order = [reg.id for reg in pipe.registry.get("tool.before", tool="read")]
    print("execution order for read:", order)
    result = await pipe.call_tool(
        "Read", {"path": "src/../README.md"}, call=read_file, agent_id="coder"
    )
    print("tool returned:", result.output)


if __name__ == "__main__":
    anyio.run(main)
