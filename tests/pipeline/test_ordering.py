"""Execution order: priorities, registration order, the middleware onion, the core
sequence, and chains that follow registry changes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from interpose import (
    ApprovalRequest,
    Interceptor,
    Middleware,
    Pipeline,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
    ToolContext,
    ToolResult,
)

Next = Callable[[], Awaitable[None]]


def marker(log: list[str], name: str) -> Callable[[Any, Any], None]:
    def handler(inp: Any, out: Any) -> None:
        log.append(name)

    return handler


def recording_tool(log: list[str]) -> Callable[[dict[str, Any]], str]:
    def tool(args: dict[str, Any]) -> str:
        log.append("tool")
        return "ran"

    return tool


async def test_priority_descending_then_registration_order(pipe: Pipeline) -> None:
    log: list[str] = []
    for name, priority in [("a0", 0), ("b10", 10), ("c0", 0), ("d10", 10), ("e-5", -5)]:
        pipe.registry.add(
            Interceptor(id=name, hook="tool.before", handler=marker(log, name), priority=priority)
        )
    pipe.registry.add(
        Interceptor(id="f100", hook="tool.before", handler=marker(log, "f100"), priority=100)
    )

    await pipe.call_tool("read", {}, call=recording_tool(log))

    expected = ["f100", "b10", "d10", "a0", "c0", "e-5"]
    assert log == [*expected, "tool"]
    assert [r.id for r in pipe.registry.get("tool.before", tool="read")] == expected


async def test_priority_orders_approvers_and_after_hooks(pipe: Pipeline) -> None:
    log: list[str] = []

    for name, priority in [("ap-low", -1), ("ap-high", 5), ("ap-mid", 0)]:
        pipe.approver(priority=priority, id=name)(lambda req, name=name: log.append(name))
    for name, priority in [("after-low", -10), ("after-high", 10)]:
        pipe.intercept("tool.after", priority=priority, id=name)(marker(log, name))

    await pipe.call_tool("read", {}, call=recording_tool(log))

    assert log == ["ap-high", "ap-mid", "ap-low", "tool", "after-high", "after-low"]


async def test_core_order_before_approve_tool_after(pipe: Pipeline) -> None:
    log: list[str] = []
    # registered in the reverse of their execution order, with priorities that would
    # invert it if they were compared across hooks
    pipe.intercept("tool.after", priority=1000, id="after")(marker(log, "after"))

    @pipe.approver(priority=500, id="approve")
    def approve(req: ApprovalRequest) -> None:
        log.append("approve")

    pipe.intercept("tool.before", priority=-1000, id="before")(marker(log, "before"))

    await pipe.call_tool("exec", {"command": "ls"}, call=recording_tool(log))

    assert log == ["before", "approve", "tool", "after"]


async def test_middleware_onion_highest_priority_outermost(pipe: Pipeline) -> None:
    log: list[str] = []

    def layer(name: str) -> Callable[[ToolContext, Next], Awaitable[None]]:
        async def mw(ctx: ToolContext, call_next: Next) -> None:
            log.append(f"{name}-in")
            await call_next()
            log.append(f"{name}-out")

        return mw

    # registration order deliberately differs from priority order
    pipe.registry.add(Middleware(id="B", stage="tool", handler=layer("B"), priority=5))
    pipe.registry.add(Middleware(id="C", stage="tool", handler=layer("C"), priority=-5))
    pipe.registry.add(Middleware(id="A", stage="tool", handler=layer("A"), priority=10))
    pipe.intercept("tool.before", id="before")(marker(log, "before"))
    pipe.intercept("tool.after", id="after")(marker(log, "after"))

    result = await pipe.call_tool("read", {}, call=recording_tool(log))

    assert result.output == "ran"
    assert log == [
        "A-in",
        "B-in",
        "C-in",
        "before",
        "tool",
        "after",
        "C-out",
        "B-out",
        "A-out",
    ]


async def test_middleware_ties_keep_registration_order(pipe: Pipeline) -> None:
    log: list[str] = []
    for name in ["first", "second", "third"]:

        async def mw(ctx: ToolContext, call_next: Next, name: str = name) -> None:
            log.append(name)
            await call_next()

        pipe.middleware("tool", id=name)(mw)

    await pipe.call_tool("read", {}, call=recording_tool(log))
    assert log == ["first", "second", "third", "tool"]


async def test_middleware_sees_the_result_on_the_way_out(pipe: Pipeline) -> None:
    seen: list[Any] = []

    @pipe.middleware("tool", id="wrap")
    async def wrap(ctx: ToolContext, call_next: Next) -> None:
        seen.append(ctx.result)
        await call_next()
        assert ctx.result is not None
        seen.append(ctx.result.output)
        ctx.result = ToolResult(output=f"wrapped({ctx.result.output})")

    result = await pipe.call_tool("read", {}, call=lambda args: "raw")

    assert seen == [None, "raw"]
    assert result.output == "wrapped(raw)"


async def test_middleware_short_circuit_skips_the_core(pipe: Pipeline) -> None:
    log: list[str] = []

    @pipe.middleware("tool", priority=10, id="outer")
    async def outer(ctx: ToolContext, call_next: Next) -> None:
        log.append("outer-in")
        await call_next()
        log.append("outer-out")

    @pipe.middleware("tool", priority=0, id="cache")
    async def cache(ctx: ToolContext, call_next: Next) -> None:
        log.append("cache")
        ctx.result = ToolResult(output="from cache")

    @pipe.middleware("tool", priority=-10, id="inner")
    async def inner(ctx: ToolContext, call_next: Next) -> None:
        log.append("inner")  # pragma: no cover - must not run
        await call_next()  # pragma: no cover

    pipe.intercept("tool.before", id="before")(marker(log, "before"))
    pipe.intercept("tool.after", id="after")(marker(log, "after"))

    result = await pipe.call_tool("read", {}, call=recording_tool(log))

    assert result.output == "from cache"
    assert log == ["outer-in", "cache", "outer-out"]


async def test_middleware_may_rewrite_args_for_the_core(pipe: Pipeline) -> None:
    seen: list[dict[str, Any]] = []

    @pipe.middleware("tool", id="rewrite")
    async def rewrite(ctx: ToolContext, call_next: Next) -> None:
        ctx.args["path"] = "/sandbox/" + ctx.args["path"]
        await call_next()

    @pipe.intercept("tool.before", id="before")
    def before(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        seen.append(dict(out.args))

    tool_args: list[dict[str, Any]] = []
    await pipe.call_tool("read", {"path": "a.txt"}, call=lambda a: tool_args.append(dict(a)))

    assert seen == [{"path": "/sandbox/a.txt"}]
    assert tool_args == [{"path": "/sandbox/a.txt"}]


async def test_tool_context_fields(pipe: Pipeline) -> None:
    seen: list[tuple[str, str, str]] = []

    @pipe.middleware("tool", id="look")
    async def look(ctx: ToolContext, call_next: Next) -> None:
        seen.append((ctx.tool_name, ctx.raw_name, ctx.call_id))
        ctx.state["started"] = True
        await call_next()
        assert ctx.state == {"started": True}

    await pipe.call_tool("Bash", {"command": "ls"}, call=lambda a: None, call_id="c-7")
    assert seen == [("exec", "Bash", "c-7")]


async def test_adding_and_removing_recompiles_the_chain(pipe: Pipeline) -> None:
    log: list[str] = []
    tool = recording_tool(log)

    await pipe.call_tool("exec", {"command": "ls"}, call=tool)
    assert log == ["tool"]

    log.clear()
    pipe.intercept("tool.before", id="late")(marker(log, "late"))
    await pipe.call_tool("exec", {"command": "ls"}, call=tool)
    assert log == ["late", "tool"]

    log.clear()
    pipe.intercept("tool.before", priority=5, id="later-but-higher")(marker(log, "higher"))
    await pipe.call_tool("exec", {"command": "ls"}, call=tool)
    assert log == ["higher", "late", "tool"]

    log.clear()
    pipe.registry.remove("late")
    await pipe.call_tool("exec", {"command": "ls"}, call=tool)
    assert log == ["higher", "tool"]

    log.clear()
    pipe.registry.clear()
    await pipe.call_tool("exec", {"command": "ls"}, call=tool)
    assert log == ["tool"]


async def test_middleware_added_after_first_call_is_used(pipe: Pipeline) -> None:
    log: list[str] = []
    tool = recording_tool(log)
    await pipe.call_tool("read", {}, call=tool)

    @pipe.middleware("tool", id="mw")
    async def mw(ctx: ToolContext, call_next: Next) -> None:
        log.append("mw")
        await call_next()

    await pipe.call_tool("read", {}, call=tool)
    assert log == ["tool", "mw", "tool"]

    pipe.registry.remove("mw")
    await pipe.call_tool("read", {}, call=tool)
    assert log == ["tool", "mw", "tool", "tool"]


async def test_non_tool_stage_chains_recompile_too(pipe: Pipeline) -> None:
    async with pipe.turn() as turn:
        assert (await turn.message("hi")).message == "hi"

        @pipe.intercept("message.before", id="shout")
        def shout(inp: Any, out: Any) -> None:
            out.message = out.message.upper()

        assert (await turn.message("hi")).message == "HI"
        pipe.registry.remove("shout")
        assert (await turn.message("hi")).message == "hi"


async def test_agent_matchers_select_by_agent_id(pipe: Pipeline) -> None:
    log: list[str] = []
    pipe.intercept("tool.before", agents=r"^coder$", id="coder")(marker(log, "coder"))
    pipe.intercept("tool.before", agents="review", id="review")(marker(log, "review"))
    pipe.intercept("tool.before", id="everyone")(marker(log, "everyone"))

    async def call(agent: str) -> list[str]:
        log.clear()
        await pipe.call_tool("read", {}, call=lambda a: None, agent_id=agent)
        return list(log)

    # alternate agents so that a chain cached for one is never reused for another
    assert await call("coder") == ["coder", "everyone"]
    assert await call("reviewer") == ["review", "everyone"]
    assert await call("coder") == ["coder", "everyone"]
    assert await call("main") == ["everyone"]
    assert await call("coder-2") == ["everyone"]


async def test_tool_matchers_do_not_leak_between_tools(pipe: Pipeline) -> None:
    log: list[str] = []

    @pipe.intercept("tool.after", tools="group:fs", id="fs-after")
    def fs_after(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        log.append(f"fs:{inp.tool_name}")

    for name in ["read", "exec", "write", "web_fetch", "read"]:
        await pipe.call_tool(name, {}, call=lambda a: None)

    assert log == ["fs:read", "fs:write", "fs:read"]


async def test_tool_middleware_matchers_select_the_calls_they_wrap(pipe: Pipeline) -> None:
    wrapped: list[str] = []

    @pipe.middleware("tool", tools="group:fs", agents="^coder$", id="fs-only")
    async def fs_only(ctx: ToolContext, call_next: Next) -> None:
        wrapped.append(f"{ctx.agent_id}:{ctx.tool_name}")
        await call_next()

    for agent in ["coder", "reviewer"]:
        for name in ["read", "exec", "Apply-Patch"]:
            await pipe.call_tool(name, {}, call=lambda a: None, agent_id=agent)

    assert wrapped == ["coder:read", "coder:apply_patch"]


async def test_stage_middleware_agent_matcher(pipe: Pipeline) -> None:
    @pipe.middleware("message", agents="^coder$", id="coder-prefix")
    async def coder_prefix(ctx: Any, call_next: Next) -> None:
        ctx.message = "[coder] " + ctx.message
        await call_next()

    async with pipe.turn(agent_id="coder") as turn:
        assert (await turn.message("hi")).message == "[coder] hi"
    async with pipe.turn(agent_id="reviewer") as turn:
        assert (await turn.message("hi")).message == "hi"
