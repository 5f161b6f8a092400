"""A handler that fails is reported with where it is: its qualified name, the file:line
of its definition and of the frame that raised, in the log line, the
``interceptor_failed`` event and the blocked result's details; the traceback is logged
with ``Pipeline(debug=True)`` or ``INTERPOSE_DEBUG=1``."""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import msgspec
import pytest
from opentelemetry.sdk.trace import TracerProvider

from interpose import (
    Approval,
    ApprovalRequest,
    CommandBeforeInput,
    CommandBeforeOutput,
    Pipeline,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
    ToolContext,
    ToolResult,
)
from interpose.bus.events import InterceptorFailed, decode_event, encode_event
from interpose.pipeline.failures import Fault

HERE = __file__


def _explode(what: str) -> None:
    raise LookupError(f"no {what}")  # the frame that raises: the line after the def


RAISED_AT = f"{HERE}:{_explode.__code__.co_firstlineno + 1}"


def _defined(fn: Callable[..., Any]) -> str:
    return f"{HERE}:{fn.__code__.co_firstlineno}"


def _name(fn: Callable[..., Any]) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


def bad_gate(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    _explode("profile")


async def bad_async_gate(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    await anyio.lowlevel.checkpoint()
    _explode("profile")


def bad_after(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
    _explode("profile")


def bad_approver(request: ApprovalRequest) -> None:
    _explode("profile")


def bad_command_gate(inp: CommandBeforeInput, out: CommandBeforeOutput) -> None:
    _explode("profile")


async def bad_layer(ctx: ToolContext, call_next: Callable[[], Awaitable[None]]) -> None:
    _explode("profile")


def tool(args: dict[str, Any]) -> str:
    return "ran"


def expected_failure(fn: Callable[..., Any]) -> dict[str, str]:
    return {
        "handler": _name(fn),
        "defined_at": _defined(fn),
        "raised_at": RAISED_AT,
        "error_type": "LookupError",
        "error": "LookupError: no profile",
    }


# -- the blocked result --------------------------------------------------------------------


async def _quiet(pipe: Pipeline) -> ToolResult:
    return await pipe.call_tool("exec", {"command": "ls"}, call=tool)


async def _listened(pipe: Pipeline) -> ToolResult:
    pipe.subscribe(lambda event: None, events={"tool_exec_end"})
    async with pipe:
        return await pipe.call_tool("exec", {"command": "ls"}, call=tool)


@pytest.mark.parametrize("run", [_quiet, _listened], ids=["quiet-path", "full-path"])
async def test_a_failed_gate_blocks_and_its_details_say_where(
    pipe: Pipeline, run: Callable[[Pipeline], Awaitable[ToolResult]]
) -> None:
    pipe.intercept("tool.before", id="gate")(bad_gate)

    result = await run(pipe)

    assert result.status == "blocked"
    # the reason the model reads is the fixed one: no paths in it
    assert result.output["reason"] == "interceptor 'gate' failed: LookupError: no profile"
    assert type(result.output["reason"]) is str
    assert msgspec.json.decode(msgspec.json.encode(result), type=ToolResult) == result
    assert result.details == {"decided_by": "gate", "failure": expected_failure(bad_gate)}


async def test_a_failed_gate_in_a_traced_call(provider: TracerProvider) -> None:
    pipe = Pipeline(builtins=False, tracer_provider=provider)
    pipe.intercept("tool.before", id="gate")(bad_gate)

    result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)

    assert result.details["failure"] == expected_failure(bad_gate)


async def test_an_async_gate_that_failed_after_suspending(pipe: Pipeline) -> None:
    pipe.intercept("tool.before", id="gate")(bad_async_gate)

    result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)

    assert result.details["failure"] == expected_failure(bad_async_gate)


async def test_a_failed_after_hook_that_blocks(pipe: Pipeline) -> None:
    pipe.intercept("tool.after", id="after", on_error="block")(bad_after)

    result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)

    assert result.status == "blocked"
    assert result.output["reason"] == "interceptor 'after' failed: LookupError: no profile"
    assert result.details["failure"] == expected_failure(bad_after)


async def test_a_failed_approver(pipe: Pipeline) -> None:
    pipe.approver(id="approver")(bad_approver)

    result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)

    assert result.status == "blocked"
    assert result.output["reason"] == "interceptor 'approver' failed: LookupError: no profile"
    assert result.details == {"decided_by": "approver", "failure": expected_failure(bad_approver)}


async def test_a_failed_middleware(pipe: Pipeline) -> None:
    pipe.middleware("tool", id="layer")(bad_layer)

    result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)

    assert result.status == "blocked"
    assert result.output["reason"] == "middleware 'layer' failed: LookupError: no profile"
    assert result.details["failure"] == expected_failure(bad_layer)


async def test_a_failed_command_gate(pipe: Pipeline) -> None:
    pipe.intercept("command.before", id="cmd")(bad_command_gate)

    async with pipe.turn() as turn:
        result = await turn.run_command("deploy", {}, call=tool)

    assert result.status == "blocked"
    assert result.output["reason"] == "interceptor 'cmd' failed: LookupError: no profile"
    assert result.details["failure"] == expected_failure(bad_command_gate)


async def test_a_handler_that_blocks_on_purpose_has_no_failure_details(pipe: Pipeline) -> None:
    @pipe.intercept("tool.before", id="deny")
    def deny(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.block, out.block_reason = True, "no"

    result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)

    assert result.details == {"decided_by": "deny"}


async def test_a_timeout_names_the_handler_and_no_raising_frame(pipe: Pipeline) -> None:
    @pipe.intercept("tool.before", id="slow", timeout=0.05)
    async def slow(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        await anyio.sleep(10)

    with anyio.fail_after(5):
        result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)

    failure = result.details["failure"]
    assert failure["handler"] == _name(slow)
    assert failure["defined_at"] == _defined(slow)
    assert failure["error"] == "TimeoutError: timed out after 0.05s"
    assert failure["raised_at"] == ""  # a deadline passed: nothing of the handler raised


async def test_a_late_approver_names_no_raising_frame(pipe: Pipeline) -> None:
    @pipe.approver(id="slow", timeout=0.05)
    async def slow(request: ApprovalRequest) -> None:
        await anyio.sleep(10)

    failures: list[InterceptorFailed] = []
    pipe.subscribe(failures.append, events={"interceptor_failed"})
    with anyio.fail_after(5):
        async with pipe:
            result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)

    assert result.status == "denied"
    (event,) = failures
    assert (event.handler, event.defined_at) == (_name(slow), _defined(slow))
    assert (event.timed_out, event.raised_at) == (True, "")


# -- what is named: the user's own code behind wrappers ------------------------------------


class Checker:
    def __call__(self, inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        _explode("profile")


def logged(fn: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(fn)
    def wrapper(*args: Any) -> None:
        fn(*args)

    return wrapper


@logged
def decorated_gate(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    _explode("profile")


async def test_a_callable_object_is_named_by_its_class(pipe: Pipeline) -> None:
    pipe.intercept("tool.before", id="gate")(Checker())

    result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)

    failure = result.details["failure"]
    assert failure["handler"] == _name(Checker)
    assert failure["defined_at"] == _defined(Checker.__call__)
    assert failure["raised_at"] == RAISED_AT


async def test_a_decorated_handler_is_named_by_the_function_it_wraps(pipe: Pipeline) -> None:
    pipe.intercept("tool.before", id="gate")(decorated_gate)

    result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)

    original = decorated_gate.__wrapped__  # type: ignore[attr-defined]
    assert result.details["failure"]["handler"] == _name(original)
    assert result.details["failure"]["defined_at"] == _defined(original)


# -- the event -----------------------------------------------------------------------------


async def test_the_event_says_where(pipe: Pipeline, recorder: list[Any]) -> None:
    pipe.intercept("tool.before", id="gate", on_error="skip")(bad_gate)
    pipe.subscribe(recorder.append, events={"interceptor_failed"})

    async with pipe:
        result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)

    assert result.status == "ok"  # skip: the failure is reported, the call goes on
    (event,) = recorder
    assert isinstance(event, InterceptorFailed)
    assert (event.interceptor_id, event.policy) == ("gate", "skip")
    assert (event.error_type, event.error) == ("LookupError", "LookupError: no profile")
    assert event.handler == _name(bad_gate)
    assert event.defined_at == _defined(bad_gate)
    assert event.raised_at == RAISED_AT


def test_events_of_older_versions_still_decode() -> None:
    old = msgspec.json.encode(
        {"kind": "interceptor_failed", "interceptor_id": "gate", "error_type": "KeyError"}
    )

    event = decode_event(old)

    assert isinstance(event, InterceptorFailed)
    assert (event.handler, event.defined_at, event.raised_at) == ("", "", "")
    new = InterceptorFailed(interceptor_id="gate", handler="m.f", raised_at="f.py:3")
    assert decode_event(encode_event(new)) == new


# -- the log line and the traceback --------------------------------------------------------


def _failures(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "interpose" and "failed" in r.getMessage()]


async def test_the_log_line_says_where_and_how_to_get_the_traceback(
    pipe: Pipeline, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("INTERPOSE_DEBUG", raising=False)
    pipe.intercept("tool.before", id="gate")(bad_gate)

    monkeypatch.chdir(os.path.dirname(HERE))
    with caplog.at_level(logging.WARNING, logger="interpose"):
        await pipe.call_tool("exec", {"command": "ls"}, call=tool)
        await pipe.call_tool("exec", {"command": "ls"}, call=tool)

    first, second = _failures(caplog)
    assert first.levelno == logging.WARNING
    # files under the working directory are named relative to it
    file = os.path.basename(HERE)
    where = (
        f"[handler {_name(bad_gate)} ({file}:{bad_gate.__code__.co_firstlineno}), "
        f"raised at {file}:{_explode.__code__.co_firstlineno + 1}]"
    )
    assert first.getMessage() == (
        f"tool.before 'gate' failed (exec, policy block): LookupError: no profile {where} "
        "(INTERPOSE_DEBUG=1 logs the traceback)"
    )
    assert first.exc_info is None
    # the hint is given once per pipeline
    assert second.getMessage() == (
        f"tool.before 'gate' failed (exec, policy block): LookupError: no profile {where}"
    )


async def test_files_elsewhere_are_named_in_full(
    pipe: Pipeline, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    pipe.intercept("tool.before", id="gate")(bad_gate)

    with caplog.at_level(logging.WARNING, logger="interpose"):
        await pipe.call_tool("exec", {"command": "ls"}, call=tool)

    (record,) = _failures(caplog)
    assert f"({_defined(bad_gate)}), raised at {RAISED_AT}]" in record.getMessage()


@pytest.mark.parametrize("how", ["argument", "environment"])
async def test_debug_logs_the_whole_traceback(
    how: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    if how == "environment":
        monkeypatch.setenv("INTERPOSE_DEBUG", "1")
        pipe = Pipeline(builtins=False)
    else:
        monkeypatch.delenv("INTERPOSE_DEBUG", raising=False)
        pipe = Pipeline(builtins=False, debug=True)
    pipe.intercept("tool.before", id="gate")(bad_gate)

    with caplog.at_level(logging.WARNING, logger="interpose"):
        await pipe.call_tool("exec", {"command": "ls"}, call=tool)

    (record,) = _failures(caplog)
    assert "INTERPOSE_DEBUG" not in record.getMessage()
    assert record.exc_info is not None
    assert record.exc_info[0] is LookupError
    text = caplog.text
    assert "Traceback (most recent call last)" in text
    # the handler's frame and the raising one, with their lines
    assert f'File "{HERE}", line {_explode.__code__.co_firstlineno + 1}, in _explode' in text
    assert f", in {bad_gate.__name__}" in text


async def test_debug_off_in_the_environment(
    pipe: Pipeline, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INTERPOSE_DEBUG", "0")
    pipe.intercept("tool.before", id="gate")(bad_gate)

    with caplog.at_level(logging.WARNING, logger="interpose"):
        await pipe.call_tool("exec", {"command": "ls"}, call=tool)

    (record,) = _failures(caplog)
    assert record.exc_info is None


# -- the hot path --------------------------------------------------------------------------


async def test_nothing_is_located_when_nothing_fails(
    pipe: Pipeline, recorder: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*args: Any) -> Fault:
        raise AssertionError("a failure was located, though nothing failed")

    monkeypatch.setattr(Fault, "of", never)

    @pipe.intercept("tool.before", id="fine")
    def fine(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        pass

    @pipe.intercept("tool.after", id="fine-after")
    async def fine_after(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        pass

    assert (await pipe.call_tool("exec", {"command": "ls"}, call=tool)).status == "ok"
    pipe.subscribe(recorder.append)
    async with pipe:
        assert (await pipe.call_tool("exec", {"command": "ls"}, call=tool)).status == "ok"
    assert not any(isinstance(e, InterceptorFailed) for e in recorder)


async def test_a_failed_human_approval_handler_is_located_too(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("INTERPOSE_DEBUG", raising=False)

    def ask(request: ApprovalRequest, reason: str) -> bool:
        _explode("terminal")
        return True

    pipe = Pipeline(builtins=False, human_approval=ask)
    pipe.approver(id="asker")(lambda request: Approval.ask("a human decides"))
    monkeypatch.chdir(os.path.dirname(HERE))  # the line names files relative to it

    with caplog.at_level(logging.WARNING, logger="interpose"):
        result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)

    assert result.status == "denied"  # a failed human-approval handler denies
    (record,) = [r for r in caplog.records if "human-approval" in r.getMessage()]
    assert record.getMessage() == (
        f"human-approval handler failed: LookupError: no terminal [handler {_name(ask)} "
        f"({os.path.basename(_defined(ask))}), raised at {os.path.basename(RAISED_AT)}]"
    )
