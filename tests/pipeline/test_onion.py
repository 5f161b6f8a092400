"""The compiled middleware onion: one frame per call in flight, ``call_next`` as the
middleware sees it, and calls that share a chain without sharing their state."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from interpose import Pipeline, ToolContext, ToolResult

Next = Callable[[], Awaitable[None]]


@pytest.mark.parametrize("on_error", ["block", "skip", "raise"])
async def test_concurrent_calls_through_one_onion_keep_their_own_context(
    pipe: Pipeline, on_error: Any
) -> None:
    """Calls that are in flight at once each run the onion with their own context,
    while the layers wait in between."""

    @pipe.middleware("tool", id="outer", on_error=on_error, priority=10)
    async def outer(ctx: ToolContext, call_next: Next) -> None:
        await anyio.sleep(0.001 * ctx.args["n"])
        await call_next()
        assert ctx.result is not None
        ctx.result = ToolResult(output=("outer", ctx.result.output))

    @pipe.middleware("tool", id="inner", on_error=on_error)
    async def inner(ctx: ToolContext, call_next: Next) -> None:
        await anyio.lowlevel.checkpoint()
        await call_next()

    async def tool(args: dict[str, Any]) -> int:
        await anyio.sleep(0.001 * (10 - args["n"]))
        return int(args["n"])

    results = await asyncio.gather(
        *(pipe.call_tool("exec", {"n": n}, call=tool) for n in range(10))
    )
    assert [r.output for r in results] == [("outer", n) for n in range(10)]


@pytest.mark.parametrize("on_error", ["block", "raise"])
async def test_call_next_returns_the_next_layers_coroutine(pipe: Pipeline, on_error: Any) -> None:
    """``call_next()`` gives an awaitable the middleware may await itself, hand to
    ``asyncio.wait_for`` or run as a task."""
    kinds: list[bool] = []

    @pipe.middleware("tool", id="outer", on_error=on_error, priority=10)
    async def outer(ctx: ToolContext, call_next: Next) -> None:
        step = call_next()
        kinds.append(inspect.isawaitable(step))
        await asyncio.wait_for(step, timeout=5)

    @pipe.middleware("tool", id="tasked", on_error=on_error)
    async def tasked(ctx: ToolContext, call_next: Next) -> None:
        await asyncio.ensure_future(call_next())

    result = await pipe.call_tool("exec", {}, call=lambda args: "ran")
    assert (result.status, result.output) == ("ok", "ran")
    assert kinds == [True]


async def test_a_call_that_failed_does_not_disturb_the_next(pipe: Pipeline) -> None:
    """A call that leaves with an exception (here a raise-policy middleware) does not
    give its frame back: the following calls get a clean one."""

    @pipe.middleware("tool", id="picky", on_error="raise", priority=10)
    async def picky(ctx: ToolContext, call_next: Next) -> None:
        if ctx.args.get("bad"):
            raise ValueError("bad call")
        await call_next()

    @pipe.middleware("tool", id="guarded")
    async def guarded(ctx: ToolContext, call_next: Next) -> None:
        await call_next()

    for _ in range(3):
        with pytest.raises(ValueError, match="bad call"):
            await pipe.call_tool("exec", {"bad": True}, call=lambda args: "ran")
        result = await pipe.call_tool("exec", {"n": 1}, call=lambda args: args["n"])
        assert (result.status, result.output) == ("ok", 1)


async def test_a_middleware_may_call_the_same_tool_inside_itself(pipe: Pipeline) -> None:
    """A nested call of the same chain takes a frame of its own."""

    @pipe.middleware("tool", id="nested")
    async def nested(ctx: ToolContext, call_next: Next) -> None:
        depth = ctx.args["depth"]
        if depth:
            inner = await pipe.call_tool("exec", {"depth": depth - 1}, call=lambda a: a)
            ctx.args["seen"] = inner.output
        await call_next()

    result = await pipe.call_tool("exec", {"depth": 3}, call=lambda args: args)
    assert result.output == {
        "depth": 3,
        "seen": {"depth": 2, "seen": {"depth": 1, "seen": {"depth": 0}}},
    }


async def test_a_guarded_layer_failing_after_an_inner_wait_is_settled_there(
    pipe: Pipeline,
) -> None:
    """The layer around a failing one resumes as if ``call_next()`` returned, with the
    refusal as the result, after the inner layers waited."""
    seen: list[str] = []

    @pipe.middleware("tool", id="outer", on_error="raise", priority=10)
    async def outer(ctx: ToolContext, call_next: Next) -> None:
        await call_next()
        assert ctx.result is not None
        seen.append(ctx.result.status)

    @pipe.middleware("tool", id="broken")
    async def broken(ctx: ToolContext, call_next: Next) -> None:
        await call_next()
        raise RuntimeError("after the tool")

    async def tool(args: dict[str, Any]) -> str:
        await anyio.sleep(0.001)
        return "ran"

    result = await pipe.call_tool("exec", {}, call=tool)
    assert result.status == "blocked"
    assert "RuntimeError: after the tool" in result.output["reason"]
    assert seen == ["blocked"]
