"""Error policies, timeouts, failure accounting, and bad input."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from interpose import (
    ApprovalRequest,
    CommandBeforeInput,
    CommandBeforeOutput,
    Interceptor,
    LLMAfterInput,
    LLMAfterOutput,
    LLMRequest,
    LLMResponse,
    MessageBeforeInput,
    MessageBeforeOutput,
    ParamsBeforeInput,
    ParamsBeforeOutput,
    Pipeline,
    ToolAfterInput,
    ToolAfterOutput,
    ToolContext,
    ToolResult,
)
from interpose.pipeline.chain import compile_steps

Next = Callable[[], Awaitable[None]]


class Tool:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, args: dict[str, Any]) -> str:
        self.calls += 1
        return "ran"


def boom(inp: Any, out: Any) -> None:
    raise ValueError("bad input")


class Stuck:
    """An async handler that never finishes; records that it was cancelled."""

    def __init__(self) -> None:
        self.cancelled = False

    async def __call__(self, *args: Any) -> None:
        try:
            await anyio.Event().wait()
        except BaseException:
            self.cancelled = True
            raise


# -- the three policies on tool.before --------------------------------------------------


@pytest.mark.parametrize("on_error", [None, "block"], ids=["default", "explicit"])
async def test_block_policy_fails_the_call_closed(pipe: Pipeline, on_error: Any) -> None:
    pipe.intercept("tool.before", id="guard", on_error=on_error)(boom)
    tool = Tool()

    result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)

    assert tool.calls == 0
    assert result.status == "blocked"
    assert result.is_error is True
    assert result.output == {
        "status": "blocked",
        "tool": "exec",
        "reason": "interceptor 'guard' failed: ValueError: bad input",
    }
    assert result.details["decided_by"] == "guard"
    assert pipe.stats.failures == {"guard": 1}


async def test_block_policy_skips_the_rest_of_the_before_phase(pipe: Pipeline) -> None:
    later: list[str] = []
    pipe.intercept("tool.before", priority=10, id="guard")(boom)
    pipe.intercept("tool.before", priority=0, id="later")(lambda i, o: later.append("later"))

    result = await pipe.call_tool("exec", {"command": "ls"}, call=Tool())
    assert result.status == "blocked"
    assert later == []


async def test_skip_policy_goes_on_and_runs_the_tool(pipe: Pipeline) -> None:
    later: list[str] = []
    pipe.intercept("tool.before", priority=10, id="flaky", on_error="skip")(boom)
    pipe.intercept("tool.before", priority=0, id="later")(lambda i, o: later.append("later"))
    tool = Tool()

    result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)

    assert result.status == "ok"
    assert result.output == "ran"
    assert tool.calls == 1
    assert later == ["later"]
    assert pipe.stats.failures == {"flaky": 1}


async def test_raise_policy_reaches_the_caller_as_itself(pipe: Pipeline) -> None:
    pipe.intercept("tool.before", id="strict", on_error="raise")(boom)
    tool = Tool()

    with pytest.raises(ValueError, match="bad input") as info:
        await pipe.call_tool("exec", {"command": "ls"}, call=tool)

    assert type(info.value) is ValueError
    assert tool.calls == 0
    assert pipe.stats.failures == {"strict": 1}


async def test_raise_policy_through_turn_and_entered_pipeline(
    pipe: Pipeline, recorder: list[Any]
) -> None:
    pipe.intercept("tool.before", id="strict", on_error="raise")(boom)
    pipe.subscribe(recorder.append)

    with pytest.raises(ValueError, match="bad input") as info:
        async with pipe, pipe.turn() as turn:
            await turn.call_tool("exec", {"command": "ls"}, call=Tool())

    assert type(info.value) is ValueError
    assert turn.aborted is False
    assert "interceptor_failed" in [e.kind for e in recorder]


# -- defaults per hook --------------------------------------------------------------------


async def test_tool_after_defaults_to_skip(pipe: Pipeline) -> None:
    later: list[str] = []
    pipe.intercept("tool.after", priority=10, id="broken-after")(boom)

    @pipe.intercept("tool.after", priority=0, id="later")
    def after(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        later.append(out.result.output)

    result = await pipe.call_tool("read", {}, call=Tool())

    assert result.status == "ok"
    assert result.output == "ran"
    assert later == ["ran"]
    assert pipe.stats.failures == {"broken-after": 1}


async def test_tool_after_block_policy_replaces_the_result(pipe: Pipeline) -> None:
    pipe.intercept("tool.after", id="redactor", on_error="block")(boom)
    tool = Tool()
    result = await pipe.call_tool("read", {}, call=tool)
    # the tool ran, but its output must not reach the agent unredacted
    assert tool.calls == 1
    assert result.status == "blocked"
    assert result.output["reason"] == "interceptor 'redactor' failed: ValueError: bad input"


async def test_message_before_defaults_to_raise(pipe: Pipeline) -> None:
    @pipe.intercept("message.before", id="broken")
    def broken(inp: MessageBeforeInput, out: MessageBeforeOutput) -> None:
        raise ValueError("cannot parse")

    with pytest.raises(ValueError, match="cannot parse"):
        async with pipe.turn() as turn:
            await turn.message("hello")
    assert pipe.stats.failures == {"broken": 1}


async def test_message_before_skip_keeps_the_message(pipe: Pipeline) -> None:
    pipe.intercept("message.before", id="broken", on_error="skip")(boom)

    @pipe.intercept("message.before", priority=-1, id="tag")
    def tag(inp: MessageBeforeInput, out: MessageBeforeOutput) -> None:
        out.metadata["tagged"] = True

    async with pipe.turn() as turn:
        out = await turn.message("hello")
    assert out.message == "hello"
    assert out.metadata == {"tagged": True}


async def test_params_before_defaults_to_raise(pipe: Pipeline) -> None:
    @pipe.intercept("params.before", id="broken")
    def broken(inp: ParamsBeforeInput, out: ParamsBeforeOutput) -> None:
        raise KeyError("model")

    with pytest.raises(KeyError):
        async with pipe.turn() as turn:
            await turn.params()


async def test_llm_after_defaults_to_skip(pipe: Pipeline) -> None:
    @pipe.intercept("llm.after", id="broken")
    def broken(inp: LLMAfterInput, out: LLMAfterOutput) -> None:
        raise ValueError("bad")

    async with pipe.turn() as turn:
        response = await turn.call_llm(LLMRequest(), call=lambda r: LLMResponse(content="hi"))
    assert response.content == "hi"
    assert pipe.stats.failures == {"broken": 1}


async def test_command_before_defaults_to_block(pipe: Pipeline) -> None:
    @pipe.intercept("command.before", id="broken")
    def broken(inp: CommandBeforeInput, out: CommandBeforeOutput) -> None:
        raise ValueError("bad")

    ran: list[dict[str, Any]] = []
    async with pipe.turn() as turn:
        result = await turn.run_command("deploy", {}, call=ran.append)
    assert ran == []
    assert result.status == "blocked"
    assert result.output["reason"] == "interceptor 'broken' failed: ValueError: bad"


async def test_failing_approver_fails_closed(pipe: Pipeline) -> None:
    @pipe.approver(id="broken-approver")
    def broken(req: ApprovalRequest) -> None:
        raise ValueError("bad")

    tool = Tool()
    result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)
    assert tool.calls == 0
    assert result.is_error is True
    # DESIGN: a fail-closed interceptor failure is "blocked", naming the interceptor
    assert result.status == "blocked"
    assert result.output["reason"] == "interceptor 'broken-approver' failed: ValueError: bad"
    assert pipe.stats.failures == {"broken-approver": 1}


# -- timeouts ----------------------------------------------------------------------------


async def test_interceptor_past_its_timeout_is_cancelled_and_blocks(pipe: Pipeline) -> None:
    stuck = Stuck()
    pipe.intercept("tool.before", id="slow", timeout=0.05)(stuck)
    tool = Tool()

    result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)

    assert stuck.cancelled is True
    assert tool.calls == 0
    assert result.status == "blocked"
    assert result.output["reason"].startswith("interceptor 'slow' failed: TimeoutError")
    assert pipe.stats.timeouts == {"slow": 1}
    assert pipe.stats.failures == {"slow": 1}


async def test_timed_out_interceptor_with_skip_lets_the_tool_run(pipe: Pipeline) -> None:
    stuck = Stuck()
    pipe.intercept("tool.before", id="slow", timeout=0.05, on_error="skip")(stuck)
    tool = Tool()

    result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)

    assert stuck.cancelled is True
    assert result.status == "ok"
    assert tool.calls == 1


async def test_pipeline_interceptor_timeout_is_the_default() -> None:
    pipe = Pipeline(builtins=False, interceptor_timeout=0.05)
    stuck = Stuck()
    pipe.intercept("tool.after", id="slow-after")(stuck)

    result = await pipe.call_tool("read", {}, call=Tool())

    assert stuck.cancelled is True
    assert result.status == "ok"  # tool.after defaults to skip
    assert pipe.stats.timeouts == {"slow-after": 1}


async def test_an_infinite_timeout_means_none_even_with_a_pipeline_default() -> None:
    pipe = Pipeline(builtins=False, interceptor_timeout=0.05)
    release = anyio.Event()
    seen: list[bool] = []

    async def bounded_by_itself(inp: Any, out: Any) -> None:
        with anyio.move_on_after(0.3):  # the handler's own bound
            await release.wait()
        seen.append(True)

    pipe.intercept("tool.before", id="self-bounded", timeout=math.inf)(bounded_by_itself)
    fns, steps = compile_steps(pipe.registry.entries("tool.before", tool="exec"), 0.05)
    assert steps[0].timeout is None
    assert fns == (bounded_by_itself,)  # no cancel-scope wrapper at all

    with anyio.fail_after(5):
        result = await pipe.call_tool("exec", {"command": "ls"}, call=Tool())

    assert seen == [True]  # it ran past the pipeline's 0.05 s default, not cancelled
    assert result.status == "ok"
    assert pipe.stats.timeouts == {}


async def test_an_approver_with_no_timeout_that_raises_timeout_error_is_a_deny(
    pipe: Pipeline,
) -> None:
    async def late(request: Any) -> None:
        raise TimeoutError("no reply within 1s")

    pipe.approver(id="own-timer", timeout=math.inf)(late)

    result = await pipe.call_tool("exec", {"command": "ls"}, call=Tool())

    assert result.status == "denied"
    assert result.output["reason"] == (
        "approver 'own-timer' timed out: TimeoutError: no reply within 1s"
    )


async def test_late_approver_is_a_deny(pipe: Pipeline) -> None:
    stuck = Stuck()
    pipe.approver(id="slow-approver", timeout=0.05)(stuck)
    tool = Tool()

    result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)

    assert stuck.cancelled is True
    assert tool.calls == 0
    assert result.status == "denied"
    assert result.output["tool"] == "exec"
    assert "slow-approver" in result.output["reason"]
    assert pipe.stats.timeouts == {"slow-approver": 1}


async def test_approval_timeout_is_the_approvers_default() -> None:
    pipe = Pipeline(builtins=False, approval_timeout=0.05)
    stuck = Stuck()
    pipe.approver(id="slow-approver")(stuck)

    result = await pipe.call_tool("exec", {"command": "ls"}, call=Tool())
    assert stuck.cancelled is True
    assert result.status == "denied"


async def test_middleware_past_its_timeout_is_cancelled(pipe: Pipeline) -> None:
    stuck = Stuck()
    pipe.middleware("tool", id="slow-mw", timeout=0.05)(stuck)
    tool = Tool()

    result = await pipe.call_tool("read", {}, call=tool)

    assert stuck.cancelled is True
    assert tool.calls == 0
    assert result.status == "blocked"
    assert "slow-mw" in result.output["reason"]
    assert pipe.stats.timeouts == {"slow-mw": 1}


# -- failures are counted and published ----------------------------------------------------


async def test_failures_are_counted_and_published(pipe: Pipeline, recorder: list[Any]) -> None:
    pipe.intercept("tool.before", id="flaky", on_error="skip")(boom)
    stuck = Stuck()
    pipe.intercept("tool.after", id="slow", timeout=0.05)(stuck)
    pipe.subscribe(recorder.append, events={"interceptor_failed"})

    async with pipe:
        async with pipe.turn(agent_id="coder", session_key="s1") as turn:
            await turn.call_tool("exec", {"command": "ls"}, call=Tool(), call_id="c1")
        await pipe.call_tool("exec", {"command": "ls"}, call=Tool(), call_id="c2")

    assert pipe.stats.failures == {"flaky": 2, "slow": 2}
    assert pipe.stats.timeouts == {"slow": 2}
    assert [e.kind for e in recorder] == ["interceptor_failed"] * 4
    first, second = recorder[0], recorder[1]
    assert (first.interceptor_id, first.hook, first.policy) == ("flaky", "tool.before", "skip")
    assert (first.error_type, first.timed_out) == ("ValueError", False)
    assert "bad input" in first.error
    assert (first.tool_name, first.tool_call_id) == ("exec", "c1")
    assert (first.agent_id, first.session_key, first.turn_id) == ("coder", "s1", turn.turn_id)
    assert (second.interceptor_id, second.hook) == ("slow", "tool.after")
    assert second.timed_out is True
    assert [e.tool_call_id for e in recorder[2:]] == ["c2", "c2"]


async def test_failures_are_counted_without_subscribers(pipe: Pipeline) -> None:
    pipe.intercept("tool.before", id="flaky", on_error="skip")(boom)
    for _ in range(3):
        await pipe.call_tool("read", {}, call=Tool())
    assert pipe.stats.failures == {"flaky": 3}


# -- middleware failures -------------------------------------------------------------------


async def test_failing_middleware_blocks_by_default_on_the_tool_stage(
    pipe: Pipeline,
) -> None:
    @pipe.middleware("tool", id="broken-mw")
    async def broken(ctx: ToolContext, call_next: Next) -> None:
        raise RuntimeError("middleware bug")

    tool = Tool()
    result = await pipe.call_tool("write", {"path": "a"}, call=tool)

    assert tool.calls == 0
    assert result.status == "blocked"
    assert result.is_error is True
    assert result.output["tool"] == "write"
    assert "broken-mw" in result.output["reason"]
    assert "RuntimeError: middleware bug" in result.output["reason"]
    assert pipe.stats.failures == {"broken-mw": 1}


async def test_failing_middleware_with_skip_runs_the_inner_layers(pipe: Pipeline) -> None:
    @pipe.middleware("tool", id="broken-mw", on_error="skip")
    async def broken(ctx: ToolContext, call_next: Next) -> None:
        raise RuntimeError("middleware bug")

    tool = Tool()
    result = await pipe.call_tool("write", {"path": "a"}, call=tool)
    assert result.status == "ok"
    assert tool.calls == 1
    assert pipe.stats.failures == {"broken-mw": 1}


@pytest.mark.parametrize(
    ("second_entry", "runs"),
    [
        # fails before call_next on its second entry: skipped, the inner layers still run
        ("fail-before", 2),
        # fails after call_next on its second entry: skipped, nothing runs a third time
        ("fail-after", 2),
        # returns without call_next and without a result on its second entry: a
        # failure, skipped, so the inner layers run
        ("forget", 2),
    ],
)
async def test_a_guarded_layer_entered_twice_knows_each_time_whether_it_called_next(
    pipe: Pipeline, second_entry: str, runs: int
) -> None:
    """An outer layer that calls call_next() twice enters the guarded layer twice: what
    the guarded layer did the first time must not count the second time."""
    entries = 0

    @pipe.middleware("tool", id="twice", on_error="raise", priority=10)
    async def twice(ctx: ToolContext, call_next: Next) -> None:
        await call_next()
        ctx.result = None
        await call_next()

    @pipe.middleware("tool", id="guarded", on_error="skip", priority=0)
    async def guarded(ctx: ToolContext, call_next: Next) -> None:
        nonlocal entries
        entries += 1
        if entries == 1:
            await call_next()
        elif second_entry == "fail-before":
            raise RuntimeError("before")
        elif second_entry == "fail-after":
            await call_next()
            raise RuntimeError("after")

    tool = Tool()
    result = await pipe.call_tool("write", {"path": "a"}, call=tool)

    assert result.status == "ok"
    assert entries == 2
    assert tool.calls == runs
    assert pipe.stats.failures == {"guarded": 1}


async def test_failing_middleware_with_raise_propagates(pipe: Pipeline) -> None:
    @pipe.middleware("tool", id="broken-mw", on_error="raise")
    async def broken(ctx: ToolContext, call_next: Next) -> None:
        raise RuntimeError("middleware bug")

    with pytest.raises(RuntimeError, match="middleware bug"):
        await pipe.call_tool("write", {"path": "a"}, call=Tool())


async def test_middleware_without_call_next_or_result_is_a_failure(pipe: Pipeline) -> None:
    @pipe.middleware("tool", id="forgetful")
    async def forgetful(ctx: ToolContext, call_next: Next) -> None:
        return None

    tool = Tool()
    result = await pipe.call_tool("read", {}, call=tool)

    assert tool.calls == 0
    assert result.status == "blocked"
    assert "forgetful" in result.output["reason"]
    assert "call_next" in result.output["reason"]
    assert pipe.stats.failures == {"forgetful": 1}


async def test_middleware_without_call_next_or_result_raises_under_raise(
    pipe: Pipeline,
) -> None:
    @pipe.middleware("tool", id="forgetful", on_error="raise")
    async def forgetful(ctx: ToolContext, call_next: Next) -> None:
        return None

    with pytest.raises(RuntimeError, match="call_next"):
        await pipe.call_tool("read", {}, call=Tool())


# -- the tool itself ----------------------------------------------------------------------


@pytest.mark.parametrize("is_async", [False, True])
async def test_a_tool_that_raises_gives_an_error_result(pipe: Pipeline, is_async: bool) -> None:
    def sync_tool(args: dict[str, Any]) -> None:
        raise FileNotFoundError("no such file: x")

    async def async_tool(args: dict[str, Any]) -> None:
        raise FileNotFoundError("no such file: x")

    seen: list[ToolAfterInput] = []
    pipe.intercept("tool.after", id="after")(lambda inp, out: seen.append(inp))
    result = await pipe.call_tool("read", {}, call=async_tool if is_async else sync_tool)

    assert result.status == "error"
    assert result.is_error is True
    assert result.output == "FileNotFoundError: no such file: x"
    assert [(i.is_error, i.blocked, i.status) for i in seen] == [(True, False, "error")]


async def test_a_tool_that_raises_with_an_empty_pipeline(pipe: Pipeline) -> None:
    def tool(args: dict[str, Any]) -> None:
        raise ValueError("nope")

    result = await pipe.call_tool("read", {}, call=tool)
    assert (result.status, result.is_error, result.output) == ("error", True, "ValueError: nope")


async def test_async_tool_result(pipe: Pipeline) -> None:
    async def tool(args: dict[str, Any]) -> dict[str, Any]:
        await anyio.lowlevel.checkpoint()
        return {"lines": 3}

    result = await pipe.call_tool("read", {}, call=tool)
    assert result == ToolResult(output={"lines": 3}, is_error=False, status="ok")


# -- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize("with_interceptor", [False, True])
async def test_args_must_be_a_dict(pipe: Pipeline, with_interceptor: bool) -> None:
    if with_interceptor:
        pipe.intercept("tool.before", id="x")(lambda i, o: None)
    with pytest.raises(TypeError, match="list"):
        await pipe.call_tool("read", ["path"], call=Tool())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="str"):
        async with pipe.turn() as turn:
            await turn.call_tool("read", "path=x", call=Tool())  # type: ignore[arg-type]


@pytest.mark.parametrize("with_interceptor", [False, True])
async def test_call_must_be_callable(pipe: Pipeline, with_interceptor: bool) -> None:
    if with_interceptor:
        pipe.intercept("tool.before", id="x")(lambda i, o: None)
    with pytest.raises(TypeError, match="callable"):
        await pipe.call_tool("read", {}, call="read_file")  # type: ignore[arg-type]


async def test_subscribers_require_an_entered_pipeline(pipe: Pipeline, recorder: list[Any]) -> None:
    pipe.subscribe(recorder.append)
    tool = Tool()

    with pytest.raises(RuntimeError, match="async with pipe"):
        await pipe.call_tool("read", {}, call=tool)
    with pytest.raises(RuntimeError, match="async with pipe"):
        async with pipe.turn():
            pass  # pragma: no cover - never entered

    async def body(turn: Any) -> None:
        return None  # pragma: no cover - never run

    with pytest.raises(RuntimeError, match="async with pipe"):
        await pipe.run_turn(body)
    assert tool.calls == 0
    assert recorder == []


async def test_failures_under_raise_are_published_too(pipe: Pipeline, recorder: list[Any]) -> None:
    @pipe.intercept("message.before", id="strict")
    def strict(inp: MessageBeforeInput, out: MessageBeforeOutput) -> None:
        raise ValueError("unparseable")

    pipe.subscribe(recorder.append, events={"interceptor_failed"})
    with pytest.raises(ValueError, match="unparseable"):
        async with pipe, pipe.turn() as turn:
            await turn.message("hello")

    assert [(e.interceptor_id, e.hook, e.policy) for e in recorder] == [
        ("strict", "message.before", "raise")
    ]


async def test_failing_middleware_is_published(pipe: Pipeline, recorder: list[Any]) -> None:
    @pipe.middleware("tool", id="broken-mw")
    async def broken(ctx: ToolContext, call_next: Next) -> None:
        raise RuntimeError("middleware bug")

    pipe.subscribe(recorder.append, events={"interceptor_failed"})
    async with pipe:
        await pipe.call_tool("read", {}, call=Tool(), call_id="c1")

    assert [(e.interceptor_id, e.error_type, e.tool_call_id) for e in recorder] == [
        ("broken-mw", "RuntimeError", "c1")
    ]


# -- what a middleware's policy applies to ------------------------------------------------------


def wrap_in_middleware(pipe: Pipeline, stage: str, policy: str) -> list[str]:
    """A layer with ``policy`` around ``stage`` that records how its call_next ended
    (policy "raise" with a timeout: a guarded layer that lets failures through)."""
    ended: list[str] = []
    timeout = 5.0 if policy == "raise-with-timeout" else None
    on_error = "raise" if policy == "raise-with-timeout" else policy

    @pipe.middleware(stage, id=f"outer-{stage}", on_error=on_error, timeout=timeout)  # type: ignore[arg-type]
    async def outer(ctx: Any, call_next: Next) -> None:
        try:
            await call_next()
        except Exception as exc:
            ended.append(type(exc).__name__)
            raise

    return ended


TOOL_POLICIES = ["skip", "block", "raise-with-timeout", "raise"]


@pytest.mark.parametrize("policy", TOOL_POLICIES)
@pytest.mark.parametrize("hook", ["tool.before", "tool.approve", "tool.after"])
async def test_a_raise_interceptor_inside_a_middleware_reaches_the_caller_as_itself(
    pipe: Pipeline, hook: str, policy: str
) -> None:
    ended = wrap_in_middleware(pipe, "tool", policy)
    error = KeyError("the original")

    def strict(*args: Any) -> None:
        raise error

    pipe.add(Interceptor(id="strict", hook=hook, handler=strict, on_error="raise"))
    tool = Tool()
    with pytest.raises(KeyError) as caught:
        await pipe.call_tool("exec", {"command": "ls"}, call=tool)
    assert caught.value is error
    assert ended == ["KeyError"]  # it went through the middleware, which left it alone
    assert pipe.stats.failures == {"strict": 1}  # recorded once, as the interceptor's
    assert tool.calls == (1 if hook == "tool.after" else 0)


@pytest.mark.parametrize("policy", ["skip", "block"])
async def test_a_raise_middleware_inside_a_guarded_one_reaches_the_caller(
    pipe: Pipeline, policy: str
) -> None:
    wrap_in_middleware(pipe, "tool", policy)

    @pipe.middleware("tool", id="inner", priority=-1, on_error="raise")
    async def inner(ctx: ToolContext, call_next: Next) -> None:
        raise LookupError("inner layer bug")

    with pytest.raises(LookupError, match="inner layer bug"):
        await pipe.call_tool("exec", {"command": "ls"}, call=Tool())
    assert pipe.stats.failures == {}  # a plain "raise" layer is not recorded


@pytest.mark.parametrize("policy", ["skip", "block"])
async def test_a_middleware_still_applies_its_policy_to_its_own_failure_after_call_next(
    pipe: Pipeline, policy: str
) -> None:
    @pipe.middleware("tool", id="post", on_error=policy)  # type: ignore[arg-type]
    async def post(ctx: ToolContext, call_next: Next) -> None:
        await call_next()
        raise RuntimeError("post-processing bug")

    result = await pipe.call_tool("exec", {"command": "ls"}, call=Tool())
    assert result.status == ("ok" if policy == "skip" else "blocked")
    assert pipe.stats.failures == {"post": 1}


@pytest.mark.parametrize("policy", ["skip", "raise-with-timeout"])
async def test_what_the_llm_call_or_the_turn_body_raises_passes_middleware_unchanged(
    pipe: Pipeline, policy: str
) -> None:
    wrap_in_middleware(pipe, "llm", policy)
    wrap_in_middleware(pipe, "turn", policy)
    error = ConnectionError("model unreachable")

    def llm(request: LLMRequest) -> LLMResponse:
        raise error

    async def body(turn: Any) -> None:
        await turn.call_llm(LLMRequest(), call=llm)

    with pytest.raises(ConnectionError) as caught:
        await pipe.run_turn(body)
    assert caught.value is error
    assert pipe.stats.failures == {}


# -- arguments that are not a dict, with and without middleware ---------------------------------


@pytest.mark.parametrize("with_middleware", [False, "skip", "block", "raise"])
async def test_args_left_as_a_non_dict_raise_type_error_with_any_middleware(
    pipe: Pipeline, with_middleware: Any
) -> None:
    if with_middleware:
        wrap_in_middleware(pipe, "tool", with_middleware)

    @pipe.intercept("tool.before", id="rewrite")
    def rewrite(inp: Any, out: Any) -> None:
        out.args = ["ls", "-la"]

    tool = Tool()
    with pytest.raises(TypeError, match=r"tool\.before interceptors left args as list"):
        await pipe.call_tool("exec", {"command": "ls"}, call=tool)
    assert tool.calls == 0
    assert pipe.stats.failures == {}


async def test_a_middleware_that_replaces_ctx_args_with_a_non_dict_raises_type_error(
    pipe: Pipeline,
) -> None:
    @pipe.middleware("tool", id="mangle")
    async def mangle(ctx: ToolContext, call_next: Next) -> None:
        ctx.args = "command=ls"  # type: ignore[assignment]
        await call_next()

    with pytest.raises(TypeError, match=r"tool middleware left ctx\.args as str"):
        await pipe.call_tool("exec", {"command": "ls"}, call=Tool())


@pytest.mark.parametrize("with_middleware", [False, True])
@pytest.mark.parametrize("with_interceptor", [False, True])
async def test_a_dict_subclass_is_a_dict_everywhere(
    pipe: Pipeline, with_middleware: bool, with_interceptor: bool, recorder: list[Any]
) -> None:
    if with_middleware:
        wrap_in_middleware(pipe, "tool", "block")
    if with_interceptor:
        pipe.intercept("tool.before", id="noop")(lambda inp, out: None)
    seen: list[Any] = []
    args = OrderedDict(command="ls")
    result = await pipe.call_tool("exec", args, call=seen.append)
    assert result.status == "ok"
    assert seen == [args]


@pytest.mark.parametrize("with_middleware", [False, "skip", "block"])
async def test_command_args_left_as_a_non_dict_raise_type_error(
    pipe: Pipeline, with_middleware: Any
) -> None:
    if with_middleware:
        wrap_in_middleware(pipe, "command", with_middleware)

    @pipe.intercept("command.before", id="rewrite")
    def rewrite(inp: CommandBeforeInput, out: CommandBeforeOutput) -> None:
        out.args = "all"  # type: ignore[assignment]

    with pytest.raises(TypeError, match=r"command\.before interceptors left args as str"):
        async with pipe.turn() as turn:
            await turn.run_command("clear", {}, call=Tool())
