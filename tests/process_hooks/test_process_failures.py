"""A process hook that fails to answer never hangs the agent: the call ends in the hook's
on_error policy with a reason naming the problem, ``interceptor_failed`` is published,
other calls are served throughout, and a broken child is replaced.

The child (children/misbehave.py) misbehaves as the call's ``args["behave"]`` says.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from interpose import LLMRequest, LLMResponse, Pipeline, ToolResult
from interpose.bus.events import InterceptorFailed
from interpose.middleware.process import ProcessHook, ProcessHookError

pytestmark = pytest.mark.integration

CHILDREN = Path(__file__).parent / "children"
TIMEOUT = 0.3


def child(name: str) -> list[str]:
    return [sys.executable, str(CHILDREN / f"{name}.py")]


def misbehave(on_error: Any = "block", **options: Any) -> ProcessHook:
    settings: dict[str, Any] = {
        "tools": "exec",
        "timeout": TIMEOUT,
        "max_line": 65536,
        "restart_backoff": (0.05, 0.5),
        **options,
    }
    return ProcessHook("m", child("misbehave"), on_error=on_error, **settings)


def tool(args: dict[str, Any]) -> str:
    return f"ran {args}"


# (behave, what the error says, does the child get replaced)
FAILURES = [
    pytest.param(
        "sleep",
        f"ProcessHookTimeout: process hook 'm': hook.before_tool: no reply within {TIMEOUT}s",
        True,
        id="timeout",
    ),
    pytest.param(
        "garbage",
        "ProcessHookError: process hook 'm': hook.before_tool: reply is not valid JSON: "
        "JSON is malformed: invalid character (byte 4), in 'this is not json'",
        False,
        id="garbage",
    ),
    pytest.param(
        "exit",
        "ProcessHookError: process hook 'm': hook.before_tool: the process exited with code 3",
        True,
        id="exit-mid-request",
    ),
    pytest.param(
        "flood",
        "ProcessHookError: process hook 'm': hook.before_tool: a line on its stdout is "
        "longer than max_line (65536 bytes)",
        True,
        id="line-over-max_line",
    ),
    pytest.param(
        "wrong_id",
        "ProcessHookError: process hook 'm': hook.before_tool: reply to unknown id",
        False,
        id="unknown-id",
    ),
    pytest.param(
        "bad_type",
        "ProcessHookError: process hook 'm': hook.before_tool: invalid reply: "
        "Expected `object | null`, got `str` - at `$.args`",
        False,
        id="wrong-field-type",
    ),
    pytest.param(
        "bad_utf8",
        "ProcessHookError: process hook 'm': hook.before_tool: reply is not valid UTF-8: "
        "invalid start byte (0xff)",
        False,
        id="invalid-utf8-in-the-result",
    ),
    pytest.param(
        "bad_utf8_error",
        "ProcessHookError: process hook 'm': hook.before_tool: reply is not valid UTF-8: "
        'invalid start byte (0xff), in \'{"jsonrpc": "2.0", "id": ',
        False,
        id="invalid-utf8-in-the-envelope",
    ),
    pytest.param(
        "rpc_error",
        "ProcessHookError: process hook 'm': hook.before_tool: the child answered with "
        "error -32000: database unavailable",
        False,
        id="json-rpc-error",
    ),
]


@pytest.mark.parametrize("on_error", ["block", "skip"])
@pytest.mark.parametrize(("behave", "error", "replaced"), FAILURES)
async def test_a_failed_call_follows_on_error_and_the_hook_recovers(
    behave: str, error: str, replaced: bool, on_error: str
) -> None:
    pipe = Pipeline(builtins=False)
    hook = misbehave(on_error)
    hook.install(pipe)
    failures: list[InterceptorFailed] = []
    pipe.subscribe(failures.append, events={"interceptor_failed"})
    others: list[ToolResult] = []
    with anyio.fail_after(10):
        async with pipe:
            first_pid = hook.pid
            result: ToolResult | None = None

            async def failing() -> None:
                nonlocal result
                result = await pipe.call_tool("exec", {"behave": behave}, call=tool)

            async with anyio.create_task_group() as tg:
                tg.start_soon(failing)
                # the failing call is under way: other calls are still served
                await anyio.wait_all_tasks_blocked()
                others.append(await pipe.call_tool("read", {"path": "x"}, call=tool))
            await hook.wait_ready()
            later = await pipe.call_tool("exec", {"behave": "ok"}, call=tool)
            later_pid = hook.pid
    assert result is not None
    if on_error == "block":
        assert result.status == "blocked"
        reason = result.output["reason"]
        assert reason.startswith(f"interceptor 'process:m:before_tool' failed: {error}")
        assert result.details["decided_by"] == "process:m:before_tool"
    else:
        assert (result.status, result.output) == ("ok", "ran {'behave': '" + behave + "'}")
    assert [(f.hook, f.interceptor_id, f.policy, f.tool_name) for f in failures] == [
        ("tool.before", "process:m:before_tool", on_error, "exec")
    ]
    assert failures[0].error.startswith(error)
    assert failures[0].timed_out is (behave == "sleep")
    assert [r.status for r in others] == ["ok"]
    # the hook answers again: a new child if the old one was broken, else the same one
    assert (later.status, later.output) == ("responded", f"answered by {later_pid}")
    assert (later_pid != first_pid) is replaced
    assert hook.stats.restarts == int(replaced)
    assert hook.stats.failed == 1
    assert hook.in_flight == 0


async def test_a_call_arriving_while_the_child_is_down_fails_at_once() -> None:
    pipe = Pipeline(builtins=False)
    hook = misbehave(timeout=5.0, restart_backoff=(30.0, 30.0))
    hook.install(pipe)
    skipper = ProcessHook(
        "s", child("misbehave"), tools="read", on_error="skip", restart_backoff=(30.0, 30.0)
    )
    skipper.install(pipe)
    # bounded well below the 30 s backoff: closing the pipeline does not wait for it
    with anyio.fail_after(5):
        async with pipe:
            crashed = await pipe.call_tool("exec", {"behave": "exit"}, call=tool)
            await pipe.call_tool("read", {"behave": "exit"}, call=tool)
            with anyio.fail_after(1):  # far below the hook's 5 s timeout
                blocked = await pipe.call_tool("exec", {"behave": "ok"}, call=tool)
                skipped = await pipe.call_tool("read", {"behave": "ok"}, call=tool)
    assert crashed.status == "blocked"
    assert blocked.status == "blocked"
    assert blocked.output["reason"].startswith(
        "interceptor 'process:m:before_tool' failed: ProcessHookError: process hook 'm' is "
        "not running (the process exited with code 3); "  # then when it restarts
    )
    assert (skipped.status, skipped.output) == ("ok", "ran {'behave': 'ok'}")
    assert hook.stats.starts == 1


async def test_one_slow_call_fails_alone_while_the_child_serves_others() -> None:
    pipe = Pipeline(builtins=False)
    hook = misbehave()
    hook.install(pipe)
    slow: ToolResult | None = None
    with anyio.fail_after(10):
        async with pipe:
            pid = hook.pid

            async def sleeper() -> None:
                nonlocal slow
                slow = await pipe.call_tool("exec", {"behave": "sleep"}, call=tool)

            async with anyio.create_task_group() as tg:
                tg.start_soon(sleeper)
                await anyio.wait_all_tasks_blocked()  # its request is out
                fast = await pipe.call_tool("exec", {"behave": "ok"}, call=tool)
                assert hook.in_flight == 1
            later_pid = hook.pid
    assert slow is not None
    assert slow.status == "blocked"
    assert "no reply within 0.3s" in slow.output["reason"]
    assert (fast.status, fast.output) == ("responded", f"answered by {pid}")
    # it answered after the slow call was sent: alive, so it was not restarted
    assert (hook.stats.restarts, hook.stats.timeouts, later_pid) == (0, 1, pid)


async def test_a_child_that_stops_reading_cannot_hold_a_call_past_its_timeout() -> None:
    pipe = Pipeline(builtins=False)
    hook = misbehave()
    hook.install(pipe)
    big = {"behave": "ok", "padding": "x" * (1 << 20)}  # far more than the pipe holds
    with anyio.fail_after(10):
        async with pipe:
            pid = hook.pid
            deaf = await pipe.call_tool("exec", {"behave": "deaf"}, call=tool)
            with anyio.fail_after(TIMEOUT * 4):
                stuck = await pipe.call_tool("exec", big, call=tool)
            await hook.wait_ready()
            later = await pipe.call_tool("exec", {"behave": "ok"}, call=tool)
            later_pid = hook.pid
    assert deaf.status == "blocked"
    assert "no reply within 0.3s" in deaf.output["reason"]
    # the first call timing out with no reply since stopped the child; the big write
    # either found it gone or waited for the full pipe until the call's deadline
    assert stuck.status == "blocked"
    assert stuck.output["reason"].startswith("interceptor 'process:m:before_tool' failed: ")
    assert (later.status, later.output) == ("responded", f"answered by {later_pid}")
    assert later_pid != pid


async def test_a_request_larger_than_the_pipe_is_written_as_the_child_reads_it() -> None:
    pipe = Pipeline(builtins=False)
    hook = misbehave(timeout=5.0)
    hook.install(pipe)
    big = {"behave": "ok", "padding": "x" * (4 << 20)}  # many times what a pipe holds
    with anyio.fail_after(10):
        async with pipe:
            pid = hook.pid
            results = [await pipe.call_tool("exec", big, call=tool) for _ in range(3)]
    assert [(r.status, r.output) for r in results] == [("responded", f"answered by {pid}")] * 3
    assert (hook.stats.failed, hook.stats.restarts) == (0, 0)


async def test_a_full_pipe_fails_the_call_at_its_deadline() -> None:
    pipe = Pipeline(builtins=False)
    hook = misbehave(env={"DEAF": "1"})  # it reads nothing after the handshake
    hook.install(pipe)
    big = {"behave": "ok", "padding": "x" * (1 << 20)}  # far more than the pipe holds
    failures: list[InterceptorFailed] = []
    pipe.subscribe(failures.append, events={"interceptor_failed"})
    with anyio.fail_after(10):
        async with pipe:
            pid = hook.pid
            with anyio.fail_after(TIMEOUT * 4):
                stuck = await pipe.call_tool("exec", big, call=tool)
            await hook.wait_ready()  # it was stuck: a new child is up
            later_pid = hook.pid
    assert stuck.status == "blocked"
    assert [f.error for f in failures] == [
        "ProcessHookTimeout: process hook 'm': hook.before_tool: the request could not be "
        f"written within {TIMEOUT}s (the process does not read its stdin)"
    ]
    assert hook.stats.timeouts == 1
    assert later_pid != pid


async def test_a_cancelled_call_frees_its_slot_and_its_late_reply_is_harmless() -> None:
    pipe = Pipeline(builtins=False)
    hook = misbehave()
    hook.install(pipe)
    with anyio.fail_after(10):
        async with pipe:

            async def held() -> None:
                await pipe.call_tool("exec", {"behave": "hold"}, call=tool)
                pytest.fail("the held call returned")  # pragma: no cover

            async with anyio.create_task_group() as tg:
                tg.start_soon(held)
                await anyio.wait_all_tasks_blocked()
                assert hook.in_flight == 1
                tg.cancel_scope.cancel()
            assert hook.in_flight == 0
            # the child now answers the held call, then this one
            released = await pipe.call_tool("exec", {"behave": "release"}, call=tool)
    assert released.status == "responded"
    assert hook.stats.late_replies == 1
    assert (hook.stats.unknown_ids, hook.stats.failed, hook.stats.timeouts) == (0, 0, 0)


async def test_a_late_approver_is_a_deny_and_a_stuck_child_is_replaced() -> None:
    pipe = Pipeline(builtins=False)
    hook = misbehave(intercept=("approve_tool",))
    hook.install(pipe)
    failures: list[InterceptorFailed] = []
    pipe.subscribe(failures.append, events={"interceptor_failed"})
    with anyio.fail_after(10):
        async with pipe:
            pid = hook.pid
            late = await pipe.call_tool("exec", {"behave": "sleep"}, call=tool)
            await hook.wait_ready()
            allowed = await pipe.call_tool("exec", {"behave": "ok"}, call=tool)
            later_pid = hook.pid
    assert late.status == "denied"
    assert late.output["reason"] == "approver 'process:m:approve_tool' did not answer within 0.3s"
    assert [(f.interceptor_id, f.timed_out) for f in failures] == [("process:m:approve_tool", True)]
    assert allowed.status == "ok"
    assert later_pid != pid
    assert hook.stats.timeouts == 1


@pytest.mark.parametrize("on_error", ["block", "skip"])
async def test_a_broken_approver_follows_on_error(on_error: str) -> None:
    pipe = Pipeline(builtins=False)
    misbehave(on_error, intercept=("approve_tool",)).install(pipe)
    with anyio.fail_after(10):
        async with pipe:
            result = await pipe.call_tool("exec", {"behave": "garbage"}, call=tool)
    if on_error == "block":
        assert result.status == "blocked"
        assert "reply is not valid JSON" in result.output["reason"]
    else:
        assert result.status == "ok"


def gate(replies: dict[str, Any], **options: Any) -> ProcessHook:
    env = {"REPLIES": json.dumps(replies)}
    return ProcessHook("gate", child("gate"), env=env, **options)


@pytest.mark.parametrize("on_error", ["block", "skip"])
async def test_after_tool_reply_that_makes_no_sense_follows_on_error(on_error: str) -> None:
    pipe = Pipeline(builtins=False)
    reply = {"decision": {"action": "respond"}, "hook_result": {"for_llm": "x"}}
    gate({"hook.after_tool": reply}, intercept=("after_tool",), on_error=on_error).install(pipe)
    failures: list[InterceptorFailed] = []
    pipe.subscribe(failures.append, events={"interceptor_failed"})
    with anyio.fail_after(10):
        async with pipe:
            result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)
    error = (
        "ProcessHookError: process hook 'gate': hook.after_tool: invalid reply: "
        "action 'respond' does not apply to hook.after_tool"
    )
    assert [f.error for f in failures] == [error]
    if on_error == "block":
        assert result.status == "blocked"
        assert result.output["reason"] == f"interceptor 'process:gate:after_tool' failed: {error}"
    else:
        assert (result.status, result.output) == ("ok", "ran {'command': 'ls'}")


async def test_llm_hooks_fail_closed_by_raising_and_open_by_skipping() -> None:
    calls: list[LLMRequest] = []

    def model(request: LLMRequest) -> LLMResponse:
        calls.append(request)
        return LLMResponse(content="fine")

    strict = Pipeline(builtins=False)  # on_error="block": the llm points raise
    gate({"hook.before_llm": {"messages": "not a list"}}, intercept=("before_llm",)).install(strict)
    lenient = Pipeline(builtins=False)
    replies = {"hook.after_llm": {"content": 42}}
    hook = gate(replies, intercept=("after_llm",), on_error="skip")
    hook.install(lenient)
    with anyio.fail_after(10):
        async with strict:
            with pytest.raises(ProcessHookError) as caught:
                async with strict.turn() as turn:
                    await turn.call_llm(LLMRequest(), call=model)
        async with lenient, lenient.turn() as turn:
            response = await turn.call_llm(LLMRequest(), call=model)
    assert str(caught.value) == (
        "process hook 'gate': hook.before_llm: invalid reply: "
        "Expected `array | null`, got `str` - at `$.messages`"
    )
    assert len(calls) == 1  # only the lenient pipeline reached the model
    assert response.content == "fine"  # the after_llm failure was skipped
    assert hook.stats.failed == 1


async def test_the_timer_skips_calls_that_already_failed() -> None:
    pipe = Pipeline(builtins=False)
    hook = misbehave()
    hook.install(pipe)
    with anyio.fail_after(10):
        async with pipe:
            garbage = await pipe.call_tool("exec", {"behave": "garbage"}, call=tool)
            # its deadline passes while this one waits for its own
            slow = await pipe.call_tool("exec", {"behave": "sleep"}, call=tool)
            await hook.wait_ready()
            later = await pipe.call_tool("exec", {"behave": "ok"}, call=tool)
    assert [garbage.status, slow.status, later.status] == ["blocked", "blocked", "responded"]
    assert "reply is not valid JSON" in garbage.output["reason"]
    assert "no reply within 0.3s" in slow.output["reason"]
    assert (hook.stats.timeouts, hook.stats.failed) == (1, 2)


@pytest.mark.parametrize("behave", ["bad_utf8", "bad_utf8_error"])
async def test_invalid_utf8_is_an_invalid_line_and_the_child_stays(behave: str) -> None:
    pipe = Pipeline(builtins=False)
    hook = misbehave(on_error="raise")
    hook.install(pipe)
    with anyio.fail_after(10):
        async with pipe:
            pid = hook.pid
            # on_error="raise": the caller gets the hook's own error, not a bare
            # UnicodeDecodeError
            with pytest.raises(ProcessHookError) as caught:
                await pipe.call_tool("exec", {"behave": behave}, call=tool)
            later = await pipe.call_tool("exec", {"behave": "ok"}, call=tool)
            later_pid = hook.pid
    assert "reply is not valid UTF-8: invalid start byte (0xff)" in str(caught.value)
    assert (caught.value.hook, caught.value.method) == ("m", "hook.before_tool")
    assert (later.status, later.output) == ("responded", f"answered by {pid}")
    assert later_pid == pid
    stats = hook.stats
    assert (stats.invalid_lines, stats.failed, stats.restarts) == (1, 1, 0)
