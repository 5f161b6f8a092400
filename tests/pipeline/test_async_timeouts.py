"""The timeout of an async interceptor or approver, under asyncio and trio.

Under asyncio a handler with a timeout pays for it only when it suspends: one that
finishes without suspending runs with no deadline armed; one that suspends gets its
deadline armed at its first suspension.  Under trio the deadline encloses the handler
from its start.  Past it, the handler is cancelled and fails with TimeoutError, which
its error policy then settles.  Each scenario runs under both of anyio's backends.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from interpose import Approval, ApprovalRequest, Pipeline, ToolResult

BACKENDS = ("asyncio", "trio")

backends = pytest.mark.parametrize("backend", BACKENDS)


def run(backend: str, scenario: Callable[[], Awaitable[Any]]) -> Any:
    async def bounded() -> Any:
        with anyio.fail_after(10):
            return await scenario()

    return anyio.run(bounded, backend=backend)


class Tool:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, args: dict[str, Any]) -> str:
        self.calls += 1
        return "ran"


# -- a handler that does not suspend --------------------------------------------------------


@backends
def test_an_async_handler_that_does_not_suspend_runs_to_its_end_within_the_call(
    backend: str,
) -> None:
    order: list[str] = []

    async def check(inp: Any, out: Any) -> None:
        order.append("check")
        out.args["checked"] = True

    async def scenario() -> tuple[ToolResult, list[dict[str, Any]]]:
        pipe = Pipeline(builtins=False, interceptor_timeout=5.0)
        pipe.intercept("tool.before", id="check")(check)
        seen: list[dict[str, Any]] = []

        def tool(args: dict[str, Any]) -> str:
            order.append("tool")
            seen.append(args)
            return "ran"

        result = await pipe.call_tool("exec", {}, call=tool)
        return result, seen

    result, seen = run(backend, scenario)
    assert order == ["check", "tool"]
    assert result.status == "ok"
    assert seen == [{"checked": True}]


@pytest.mark.parametrize(("backend", "timed_out"), [("asyncio", False), ("trio", True)])
def test_where_the_deadline_starts(backend: str, timed_out: bool) -> None:
    """Under asyncio the deadline is armed at the handler's first suspension (a handler
    that never suspends never pays for one); under trio it encloses the handler from
    its start.  A synchronous part longer than the timeout shows the difference."""

    async def slow_start(inp: Any, out: Any) -> None:
        start = time.monotonic()
        while time.monotonic() - start < 0.15:  # holds the event loop, as a bug would
            pass
        await anyio.lowlevel.checkpoint()

    async def scenario() -> tuple[ToolResult, Pipeline]:
        pipe = Pipeline(builtins=False, interceptor_timeout=0.1)
        pipe.intercept("tool.before", id="slow-start")(slow_start)
        return await pipe.call_tool("exec", {}, call=Tool()), pipe

    result, pipe = run(backend, scenario)
    assert result.status == ("blocked" if timed_out else "ok")
    assert pipe.stats.timeouts == ({"slow-start": 1} if timed_out else {})


@backends
@pytest.mark.parametrize(
    ("policy", "status", "calls"), [("block", "blocked", 0), ("skip", "ok", 1)]
)
def test_a_failure_before_any_suspension_is_settled_by_the_policy(
    backend: str, policy: Any, status: str, calls: int
) -> None:
    async def broken(inp: Any, out: Any) -> None:
        raise ValueError("bad")

    async def scenario() -> tuple[ToolResult, Pipeline, Tool]:
        pipe = Pipeline(builtins=False, interceptor_timeout=5.0)
        pipe.intercept("tool.before", id="broken", on_error=policy)(broken)
        tool = Tool()
        return await pipe.call_tool("exec", {}, call=tool), pipe, tool

    result, pipe, tool = run(backend, scenario)
    assert (result.status, tool.calls) == (status, calls)
    assert pipe.stats.failures == {"broken": 1}
    assert pipe.stats.timeouts == {}


@backends
def test_a_failure_before_any_suspension_with_raise_reaches_the_caller(backend: str) -> None:
    async def broken(inp: Any, out: Any) -> None:
        raise ValueError("bad")

    async def scenario() -> None:
        pipe = Pipeline(builtins=False, interceptor_timeout=5.0)
        pipe.intercept("tool.before", id="broken", on_error="raise")(broken)
        await pipe.call_tool("exec", {}, call=Tool())

    with pytest.raises(ValueError, match="bad"):
        run(backend, scenario)


@backends
def test_an_approver_that_does_not_suspend_is_answered_by_its_return_value(
    backend: str,
) -> None:
    async def deny(request: ApprovalRequest) -> Approval:
        return Approval.deny("not today")

    async def allow(request: ApprovalRequest) -> bool:
        return True

    async def scenario() -> tuple[ToolResult, ToolResult]:
        pipe = Pipeline(builtins=False, approval_timeout=5.0)
        pipe.approver(id="deny", tools="exec")(deny)
        pipe.approver(id="allow", tools="read")(allow)
        return (
            await pipe.call_tool("exec", {}, call=Tool()),
            await pipe.call_tool("read", {}, call=Tool()),
        )

    denied, allowed = run(backend, scenario)
    assert (denied.status, denied.output["reason"]) == ("denied", "not today")
    assert (allowed.status, allowed.output) == ("ok", "ran")


# -- a handler that suspends ----------------------------------------------------------------


@backends
def test_a_suspending_handler_that_finishes_in_time_is_not_cancelled(backend: str) -> None:
    async def scenario() -> tuple[ToolResult, Pipeline, list[str]]:
        pipe = Pipeline(builtins=False, interceptor_timeout=5.0)
        ready = anyio.Event()
        order: list[str] = []

        async def waits(inp: Any, out: Any) -> None:
            await ready.wait()
            out.args["waited"] = True
            order.append("handler")

        pipe.intercept("tool.before", id="waits")(waits)

        def tool(args: dict[str, Any]) -> dict[str, Any]:
            order.append("tool")
            return args

        async with anyio.create_task_group() as tg:
            tg.start_soon(_set_soon, ready)
            result = await pipe.call_tool("exec", {}, call=tool)
        return result, pipe, order

    result, pipe, order = run(backend, scenario)
    assert (result.status, result.output) == ("ok", {"waited": True})
    assert order == ["handler", "tool"]
    assert pipe.stats.failures == {}


async def _set_soon(event: anyio.Event) -> None:
    await anyio.lowlevel.checkpoint()
    event.set()


@backends
@pytest.mark.parametrize(
    ("policy", "status", "calls"), [("block", "blocked", 0), ("skip", "ok", 1)]
)
def test_a_suspended_handler_past_its_timeout_is_cancelled_then_settled(
    backend: str, policy: Any, status: str, calls: int
) -> None:
    cancelled: list[bool] = []

    async def stuck(inp: Any, out: Any) -> None:
        try:
            await anyio.Event().wait()
        except BaseException:
            cancelled.append(True)
            raise

    async def scenario() -> tuple[ToolResult, Pipeline, Tool, float]:
        pipe = Pipeline(builtins=False, interceptor_timeout=0.2)
        pipe.intercept("tool.before", id="stuck", on_error=policy)(stuck)
        tool = Tool()
        start = time.monotonic()
        result = await pipe.call_tool("exec", {}, call=tool)
        return result, pipe, tool, time.monotonic() - start

    result, pipe, tool, elapsed = run(backend, scenario)
    assert cancelled == [True]
    assert (result.status, tool.calls) == (status, calls)
    assert pipe.stats.timeouts == {"stuck": 1}
    # it fired at its deadline: not before it, and not at the outer 10 s bound
    assert 0.2 <= elapsed < 5.0
    if policy == "block":
        assert result.output["reason"] == (
            "interceptor 'stuck' failed: TimeoutError: timed out after 0.2s"
        )


@backends
def test_a_suspended_handler_past_its_timeout_with_raise_raises_timeout_error(
    backend: str,
) -> None:
    async def stuck(inp: Any, out: Any) -> None:
        await anyio.Event().wait()

    async def scenario() -> None:
        pipe = Pipeline(builtins=False, interceptor_timeout=0.1)
        pipe.intercept("tool.after", id="stuck", on_error="raise")(stuck)
        await pipe.call_tool("exec", {}, call=Tool())

    with pytest.raises(TimeoutError):
        run(backend, scenario)


@backends
def test_each_suspending_handler_gets_its_own_full_timeout(backend: str) -> None:
    """Two handlers that each wait most of their timeout both finish."""

    async def scenario() -> tuple[ToolResult, Pipeline]:
        pipe = Pipeline(builtins=False, interceptor_timeout=0.6)

        async def waits(inp: Any, out: Any) -> None:
            await anyio.sleep(0.35)

        pipe.intercept("tool.before", id="first")(waits)
        pipe.intercept("tool.before", id="second")(waits)
        return await pipe.call_tool("exec", {}, call=Tool()), pipe

    result, pipe = run(backend, scenario)
    assert result.status == "ok"
    assert pipe.stats.timeouts == {}


@backends
def test_a_suspended_approver_past_its_timeout_is_a_deny(backend: str) -> None:
    async def stuck(request: ApprovalRequest) -> bool:
        await anyio.Event().wait()
        return True

    async def scenario() -> tuple[ToolResult, Tool]:
        pipe = Pipeline(builtins=False, approval_timeout=0.1)
        pipe.approver(id="late")(stuck)
        tool = Tool()
        return await pipe.call_tool("exec", {}, call=tool), tool

    result, tool = run(backend, scenario)
    assert (result.status, tool.calls) == ("denied", 0)
    assert result.output["reason"] == "approver 'late' did not answer within 0.1s"


@backends
def test_a_suspended_approver_answers_by_its_return_value(backend: str) -> None:
    async def deny(request: ApprovalRequest) -> Approval:
        await anyio.lowlevel.checkpoint()
        return Approval.deny("after a look")

    async def scenario() -> ToolResult:
        pipe = Pipeline(builtins=False, approval_timeout=5.0)
        pipe.approver(id="deny")(deny)
        return await pipe.call_tool("exec", {}, call=Tool())

    result = run(backend, scenario)
    assert (result.status, result.output["reason"]) == ("denied", "after a look")


# -- cancellation from outside --------------------------------------------------------------


@backends
def test_cancelling_the_caller_cancels_a_suspended_handler_and_is_no_timeout(
    backend: str,
) -> None:
    cancelled: list[bool] = []

    async def scenario() -> tuple[bool, Pipeline, Tool]:
        pipe = Pipeline(builtins=False, interceptor_timeout=5.0)
        entered = anyio.Event()

        async def stuck(inp: Any, out: Any) -> None:
            entered.set()
            try:
                await anyio.Event().wait()
            except BaseException:
                cancelled.append(True)
                raise

        pipe.intercept("tool.before", id="stuck")(stuck)
        tool = Tool()
        finished = False
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                nonlocal finished
                await pipe.call_tool("exec", {}, call=tool)
                finished = True

            tg.start_soon(call)
            await entered.wait()
            tg.cancel_scope.cancel()
        return finished, pipe, tool

    finished, pipe, tool = run(backend, scenario)
    assert cancelled == [True]
    assert finished is False  # the cancellation went through call_tool
    assert tool.calls == 0
    assert pipe.stats.failures == {}  # a cancellation is not the handler's failure
    assert pipe.stats.timeouts == {}


@backends
def test_an_outer_deadline_shorter_than_the_handlers_wins(backend: str) -> None:
    async def stuck(inp: Any, out: Any) -> None:
        await anyio.Event().wait()

    async def scenario() -> tuple[bool, Pipeline]:
        pipe = Pipeline(builtins=False, interceptor_timeout=5.0)
        pipe.intercept("tool.before", id="stuck")(stuck)
        with anyio.move_on_after(0.1) as outer:
            await pipe.call_tool("exec", {}, call=Tool())
        return outer.cancelled_caught, pipe

    caught, pipe = run(backend, scenario)
    assert caught is True
    assert pipe.stats.timeouts == {}


@backends
def test_a_handler_may_open_its_own_cancel_scopes_before_it_suspends(backend: str) -> None:
    async def bounded_by_itself(inp: Any, out: Any) -> None:
        with anyio.move_on_after(0.05) as own:  # its own bound, shorter than the timeout
            await anyio.Event().wait()
        out.args["gave_up_by_itself"] = own.cancelled_caught

    async def scenario() -> tuple[ToolResult, Pipeline]:
        pipe = Pipeline(builtins=False, interceptor_timeout=5.0)
        pipe.intercept("tool.before", id="own-bound")(bounded_by_itself)
        return await pipe.call_tool("exec", {}, call=lambda args: args), pipe

    result, pipe = run(backend, scenario)
    assert (result.status, result.output) == ("ok", {"gave_up_by_itself": True})
    assert pipe.stats.failures == {}


# -- one deadline per call: how the handlers of one call share it ---------------------------


def _busy(seconds: float) -> None:
    start = time.monotonic()
    while time.monotonic() - start < seconds:  # holds the event loop, never suspends
        pass


@backends
def test_handlers_that_never_suspend_never_time_out(backend: str) -> None:
    """However long they run: a deadline can only interrupt a handler that waits."""

    async def slow_check(inp: Any, out: Any) -> None:
        _busy(0.03)

    async def scenario() -> tuple[ToolResult, Pipeline]:
        pipe = Pipeline(builtins=False, interceptor_timeout=0.01)
        for k in range(3):
            pipe.intercept("tool.before", id=f"before-{k}")(slow_check)
            pipe.intercept("tool.after", id=f"after-{k}")(slow_check)
        return await pipe.call_tool("exec", {}, call=Tool()), pipe

    result, pipe = run(backend, scenario)
    assert (result.status, result.output) == ("ok", "ran")
    assert pipe.stats.failures == {}


@backends
@pytest.mark.parametrize("hook", ["tool.before", "tool.after"])
def test_a_short_timeout_fires_on_time(backend: str, hook: str) -> None:
    async def stuck(inp: Any, out: Any) -> None:
        await anyio.Event().wait()

    async def scenario() -> tuple[ToolResult, Pipeline, float]:
        pipe = Pipeline(builtins=False, interceptor_timeout=0.05)
        pipe.intercept(hook, id="stuck", on_error="block")(stuck)
        start = time.monotonic()
        result = await pipe.call_tool("exec", {}, call=Tool())
        return result, pipe, time.monotonic() - start

    result, pipe, elapsed = run(backend, scenario)
    assert result.status == "blocked"
    assert pipe.stats.timeouts == {"stuck": 1}
    assert 0.05 <= elapsed < 0.5


@backends
def test_a_later_handler_with_a_shorter_timeout_is_held_to_it(backend: str) -> None:
    """The first handler's deadline is 5 s away when the second one, allowed 0.05 s,
    starts waiting: the second one's deadline still fires at 0.05 s."""

    async def brief(inp: Any, out: Any) -> None:
        await anyio.lowlevel.checkpoint()

    async def stuck(inp: Any, out: Any) -> None:
        await anyio.Event().wait()

    async def scenario() -> tuple[ToolResult, Pipeline, float]:
        pipe = Pipeline(builtins=False, interceptor_timeout=5.0)
        pipe.intercept("tool.before", id="brief", priority=10)(brief)
        pipe.intercept("tool.before", id="stuck", timeout=0.05, on_error="skip")(stuck)
        start = time.monotonic()
        result = await pipe.call_tool("exec", {}, call=Tool())
        return result, pipe, time.monotonic() - start

    result, pipe, elapsed = run(backend, scenario)
    assert result.status == "ok"  # skip: the call went on without it
    assert pipe.stats.timeouts == {"stuck": 1}
    assert 0.05 <= elapsed < 0.5


@backends
def test_each_handler_counts_its_timeout_from_its_own_first_wait(backend: str) -> None:
    """A before-handler and an after-handler of one call each wait 0.2 s of their
    0.3 s: together longer than one timeout, each within its own."""

    async def waits(inp: Any, out: Any) -> None:
        await anyio.sleep(0.2)

    async def scenario() -> tuple[ToolResult, Pipeline]:
        pipe = Pipeline(builtins=False, interceptor_timeout=0.3)
        pipe.intercept("tool.before", id="before")(waits)
        pipe.intercept("tool.after", id="after")(waits)
        return await pipe.call_tool("exec", {}, call=Tool()), pipe

    result, pipe = run(backend, scenario)
    assert (result.status, result.output) == ("ok", "ran")
    assert pipe.stats.timeouts == {}


@backends
def test_the_deadline_of_a_finished_handler_does_not_reach_the_tool(backend: str) -> None:
    """A handler waited and finished; the tool then takes longer than that handler's
    timeout: the tool is not cancelled."""

    async def brief(inp: Any, out: Any) -> None:
        await anyio.lowlevel.checkpoint()

    async def slow_tool(args: dict[str, Any]) -> str:
        await anyio.sleep(0.15)
        return "slow"

    async def scenario() -> tuple[ToolResult, Pipeline]:
        pipe = Pipeline(builtins=False, interceptor_timeout=0.05)
        pipe.intercept("tool.before", id="brief")(brief)
        pipe.intercept("tool.after", id="after")(brief)
        return await pipe.call_tool("exec", {}, call=slow_tool), pipe

    result, pipe = run(backend, scenario)
    assert (result.status, result.output) == ("ok", "slow")
    assert pipe.stats.failures == {}


@backends
@pytest.mark.parametrize(
    ("policy", "status", "output"),
    [("skip", "ok", "ran"), ("block", "blocked", None)],
)
def test_a_timed_out_after_handler_is_settled_by_its_policy(
    backend: str, policy: Any, status: str, output: Any
) -> None:
    async def stuck(inp: Any, out: Any) -> None:
        await anyio.Event().wait()

    async def scenario() -> tuple[ToolResult, Pipeline]:
        pipe = Pipeline(builtins=False, interceptor_timeout=0.05)
        pipe.intercept("tool.after", id="stuck", on_error=policy)(stuck)
        return await pipe.call_tool("exec", {}, call=Tool()), pipe

    result, pipe = run(backend, scenario)
    assert result.status == status
    if output is not None:
        assert result.output == output
    else:
        assert "timed out after 0.05s" in result.output["reason"]
    assert pipe.stats.timeouts == {"stuck": 1}


@backends
def test_a_cancellation_from_outside_while_a_deadline_is_armed_stays_a_cancellation(
    backend: str,
) -> None:
    """The outer scope gives up at 0.1 s, while the handler's 0.3 s deadline is armed:
    the call is cancelled, not timed out, and a later call runs normally."""

    async def stuck(inp: Any, out: Any) -> None:
        await anyio.Event().wait()

    async def scenario() -> tuple[bool, Pipeline, ToolResult]:
        pipe = Pipeline(builtins=False, interceptor_timeout=0.3)
        pipe.intercept("tool.before", id="stuck", tools="exec")(stuck)
        pipe.intercept("tool.before", id="quick", tools="read")(_quick)
        with anyio.move_on_after(0.1) as outer:
            await pipe.call_tool("exec", {}, call=Tool())
        # the task is not left cancelled: the next call, and its own wait, go through
        later = await pipe.call_tool("read", {}, call=Tool())
        await anyio.sleep(0.3)  # past where the cancelled call's deadline would be
        return outer.cancelled_caught, pipe, later

    caught, pipe, later = run(backend, scenario)
    assert caught is True
    assert pipe.stats.failures == {}
    assert (later.status, later.output) == ("ok", "ran")


async def _quick(inp: Any, out: Any) -> None:
    await anyio.lowlevel.checkpoint()


def test_a_handler_that_swallows_its_deadline_leaves_the_task_uncancelled() -> None:
    """A handler that catches the cancellation of its deadline and returns: the call
    goes on, and the cancellation request does not stay on the task (asyncio)."""
    import asyncio

    async def stubborn(inp: Any, out: Any) -> None:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            out.args["swallowed"] = True

    async def scenario() -> tuple[ToolResult, int]:
        pipe = Pipeline(builtins=False, interceptor_timeout=0.05)
        pipe.intercept("tool.before", id="stubborn")(stubborn)
        result = await pipe.call_tool("exec", {}, call=lambda args: args)
        task: Any = asyncio.current_task()
        # Task.cancelling is 3.11's; 3.10 has no count to leave behind
        return result, task.cancelling() if hasattr(task, "cancelling") else 0

    result, cancelling = asyncio.run(scenario())
    assert (result.status, result.output) == ("ok", {"swallowed": True})
    assert cancelling == 0


@backends
def test_a_stage_loop_bounds_its_handlers_too(backend: str) -> None:
    """message.before runs its own loop (not a tool call): same deadlines."""

    async def stuck(inp: Any, out: Any) -> None:
        await anyio.Event().wait()

    async def edit(inp: Any, out: Any) -> None:
        await anyio.lowlevel.checkpoint()
        out.message = out.message.upper()

    async def scenario() -> tuple[str, Pipeline, float]:
        pipe = Pipeline(builtins=False, interceptor_timeout=0.05)
        pipe.intercept("message.before", id="stuck", on_error="skip", priority=10)(stuck)
        pipe.intercept("message.before", id="edit")(edit)
        start = time.monotonic()
        async with pipe, pipe.turn() as turn:
            out = await turn.message("hello")
        return out.message, pipe, time.monotonic() - start

    message, pipe, elapsed = run(backend, scenario)
    assert message == "HELLO"
    assert pipe.stats.timeouts == {"stuck": 1}
    assert 0.05 <= elapsed < 0.5


@backends
def test_concurrent_calls_keep_their_own_deadlines(backend: str) -> None:
    """Calls in flight at once through the same chain: the one that waits too long
    times out, the others finish."""

    async def waits(inp: Any, out: Any) -> None:
        await anyio.sleep(out.args["wait"])

    async def scenario() -> tuple[list[ToolResult], Pipeline]:
        pipe = Pipeline(builtins=False, interceptor_timeout=0.15)
        pipe.intercept("tool.before", id="waits")(waits)
        results: list[ToolResult] = [ToolResult(output=None)] * 4

        async def one(i: int, wait: float) -> None:
            results[i] = await pipe.call_tool("exec", {"wait": wait}, call=Tool())

        async with anyio.create_task_group() as tg:
            for i, wait in enumerate((0.01, 0.05, 1.0, 0.02)):
                tg.start_soon(one, i, wait)
        return results, pipe

    results, pipe = run(backend, scenario)
    assert [r.status for r in results] == ["ok", "ok", "blocked", "ok"]
    assert pipe.stats.timeouts == {"waits": 1}
