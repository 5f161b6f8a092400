"""The policy builtins: tool filter, rate limit, loop guard, secret redaction, result cache
and output cap.

Each is off until installed: build it, then ``policy.install(pipe)``.  The rate limit and
the cache read time from a ``clock``; this example passes a fake one that it moves by
hand, so that what it prints does not depend on how fast the machine is.
"""

from __future__ import annotations

import re
from typing import Any

import anyio

from interpose import Pipeline, ToolResult
from interpose.middleware.builtins import (
    LoopGuard,
    OutputCap,
    RateLimit,
    RedactSecrets,
    ResultCache,
    ToolFilter,
)


class FakeClock:
    """Seconds that only move when the example says so."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def fake_tool(args: dict[str, Any]) -> str:
    """Every tool of the example: says what it ran with."""
    return f"ran with {args}"


def show(label: str, result: ToolResult) -> None:
    if result.status in ("blocked", "denied"):
        print(f"  {label} -> {result.status}: {result.output['reason']}")
    else:
        print(f"  {label} -> {result.status}: {result.output!r}")


async def tool_filter() -> None:
    print("tool filter")
    pipe = Pipeline(builtins=False)
    ToolFilter(
        allow=["group:fs", "group:web", re.compile(r"^mcp_github_")],
        deny=["web_fetch", "write"],
    ).install(pipe)
    pipe.register_tool("mcp_github_search")  # an application tool
    for tool in ("read", "web_fetch", "exec", "mcp_github_search"):
        show(f"{tool:<17}", await pipe.call_tool(tool, {}, call=fake_tool))


async def rate_limit() -> None:
    print("rate limit: a burst of 2, then one call every 2 s, per tool and session")
    clock = FakeClock()
    pipe = Pipeline(builtins=False)
    RateLimit(rate=1, per=2.0, burst=2, tools=["exec"], clock=clock).install(pipe)
    for now in (0.0, 0.0, 0.0, 1.3, 2.0):
        clock.now = now
        result = await pipe.call_tool("exec", {"command": "make"}, call=fake_tool, session_key="s1")
        show(f"t={now:.1f}s", result)
    other = await pipe.call_tool("exec", {"command": "make"}, call=fake_tool, session_key="s2")
    show("t=2.0s, session s2", other)


async def loop_guard() -> None:
    print("loop guard: the 3rd identical call in a turn is refused")
    pipe = Pipeline(builtins=False)
    LoopGuard(max_repeats=3).install(pipe)
    async with pipe.turn(agent_id="coder", session_key="s1") as turn:
        for n in range(1, 4):
            result = await turn.call_tool("exec", {"command": "pytest -x"}, call=fake_tool)
            show(f"call {n}", result)
        other = await turn.call_tool("exec", {"command": "pytest -x -vv"}, call=fake_tool)
        show("other args", other)


async def redact_secrets() -> None:
    print("secret redaction in results")
    pipe = Pipeline(builtins=False)
    RedactSecrets().install(pipe)

    def print_env(args: dict[str, Any]) -> dict[str, str]:
        return {
            "ANTHROPIC_API_KEY": "sk-ant-api03-" + "x" * 24,
            "AUTH": "Bearer " + "y" * 24,
            "EDITOR": "vim",
        }

    result = await pipe.call_tool("exec", {"command": "env"}, call=print_env)
    print(f"  output: {result.output}")
    print(f"  details: {result.details}")


async def result_cache() -> None:
    print("result cache: 60 s, read-only tools, emptied by anything that writes")
    clock = FakeClock()
    pipe = Pipeline(builtins=False)
    ResultCache(ttl=60.0, clock=clock).install(pipe)
    runs: list[str] = []

    def read(args: dict[str, Any]) -> str:
        runs.append(args["path"])
        return f"<contents of {args['path']}>"

    for now, tool, args in (
        (0.0, "read", {"path": "README.md"}),
        (30.0, "read", {"path": "README.md"}),
        (59.9, "read", {"path": "README.md"}),
        (60.0, "read", {"path": "README.md"}),
        (61.0, "write", {"path": "README.md", "content": "new"}),
        (62.0, "read", {"path": "README.md"}),
    ):
        clock.now = now
        result = await pipe.call_tool(tool, args, call=read if tool == "read" else fake_tool)
        cached = f" (cached {result.details['cache_age']:.1f}s ago)" if result.details else ""
        print(f"  t={now:>4.1f}s {tool:<5} -> {result.status}{cached}")
    print(f"  the read tool ran {len(runs)} times")


async def output_cap() -> None:
    print("output cap")
    pipe = Pipeline(builtins=False)
    OutputCap(max_chars=40).install(pipe)

    def cat(args: dict[str, Any]) -> str:
        return "".join(f"line {n}\n" for n in range(1, 2001))

    result = await pipe.call_tool("read", {"path": "big.log"}, call=cat)
    print(f"  output: {result.output!r}")
    print(f"  details: {result.details}")


def hardened_pipeline() -> Pipeline:
    """What a production stack might install on top of the built-in guards."""
    pipe = Pipeline()  # with builtin:command-safety-guard and builtin:security-audit
    for policy in (
        ToolFilter(deny=["group:automation", "group:messaging"]),
        LoopGuard(max_repeats=3),
        RateLimit(rate=30, per=60.0, tools=["exec", "web_fetch"]),
        ResultCache(ttl=60.0),
        RedactSecrets(),
        OutputCap(max_chars=20_000),
    ):
        policy.install(pipe)
    return pipe


async def main() -> None:
    await tool_filter()
    await rate_limit()
    await loop_guard()
    await redact_secrets()
    await result_cache()
    await output_cap()
    print("hardened pipeline, tool.before on exec:")
    for reg in hardened_pipeline().registry.get("tool.before", tool="exec"):
        print(f"  {reg.priority:>4} {reg.id}")


if __name__ == "__main__":
    anyio.run(main)
