"""``pipe.call_tool_sync``: the tool stage from sync code, in a new event loop per call;
a pipeline with subscribers or services is entered for the call and left after it."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import pytest

from interpose import AbortTurn, HardAbort, Pipeline, ToolBeforeInput, ToolBeforeOutput
from interpose.bus.events import Event, ToolExecEnd

LOOP_ERROR = r"cannot run inside a running event loop: use `await pipe.call_tool\(\.\.\.\)`"


def echo(args: dict[str, Any]) -> dict[str, Any]:
    return args


async def async_echo(args: dict[str, Any]) -> dict[str, Any]:
    await anyio.lowlevel.checkpoint()
    return args


def test_a_sync_call(pipe: Pipeline) -> None:
    result = pipe.call_tool_sync("read", {"path": "x"}, call=echo)

    assert (result.status, result.output) == ("ok", {"path": "x"})


def test_an_async_tool_from_sync_code(pipe: Pipeline) -> None:
    result = pipe.call_tool_sync("read", {"path": "x"}, call=async_echo, call_id="c1")

    assert (result.status, result.output) == ("ok", {"path": "x"})


def test_the_builtin_guards_block_as_they_do_for_call_tool() -> None:
    pipe = Pipeline()  # the built-in guards
    ran: list[dict[str, Any]] = []

    result = pipe.call_tool_sync("bash", {"command": "rm -rf /"}, call=ran.append)

    assert ran == []
    assert result.status == "blocked"
    assert result.details["decided_by"] == "builtin:command-safety-guard"


def test_interceptors_rewrite_and_async_ones_run(pipe: Pipeline) -> None:
    @pipe.intercept("tool.before", id="tag")
    async def tag(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        await anyio.lowlevel.checkpoint()
        out.args = {**out.args, "tagged": inp.agent_id}

    result = pipe.call_tool_sync("read", {"path": "x"}, call=echo, agent_id="coder")

    assert result.output == {"path": "x", "tagged": "coder"}


def test_aborts_behave_as_in_call_tool(pipe: Pipeline) -> None:
    @pipe.intercept("tool.before", tools=["read"], id="stop")
    def stop(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        raise AbortTurn("enough")

    @pipe.intercept("tool.before", tools=["write"], id="halt")
    def halt(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        raise HardAbort("stop everything")

    aborted = pipe.call_tool_sync("read", {}, call=echo)
    assert (aborted.status, aborted.output["reason"]) == ("aborted", "enough")
    with pytest.raises(HardAbort, match="stop everything"):
        pipe.call_tool_sync("write", {}, call=echo)


def test_bad_input_raises_as_in_call_tool(pipe: Pipeline) -> None:
    with pytest.raises(TypeError, match="tool arguments must be a dict"):
        pipe.call_tool_sync("read", "x", call=echo)  # type: ignore[arg-type]


# -- a pipeline that must be entered ---------------------------------------------------------


def test_with_subscribers_each_call_is_entered_and_drained(pipe: Pipeline) -> None:
    seen: list[Event] = []
    delivered = threading.Event()

    async def slow_observer(event: Event) -> None:
        await anyio.sleep(0.01)  # the call returns only after this ran: drained
        seen.append(event)
        delivered.set()

    pipe.subscribe(slow_observer, events={"tool_exec_end"})

    first = pipe.call_tool_sync("read", {"path": "a"}, call=echo, call_id="c1")
    assert delivered.is_set()
    second = pipe.call_tool_sync("read", {"path": "b"}, call=echo, call_id="c2")

    assert (first.status, second.status) == ("ok", "ok")
    assert [(e.tool_call_id, e.status) for e in seen if isinstance(e, ToolExecEnd)] == [
        ("c1", "ok"),
        ("c2", "ok"),
    ]
    assert pipe._tg is None  # left after each call: it can be entered again


class Service:
    """A service that records when it runs (a process hook is one)."""

    def __init__(self) -> None:
        self.log: list[str] = []

    async def start(self, tg: anyio.abc.TaskGroup) -> None:
        self.log.append("start")

    async def aclose(self) -> None:
        self.log.append("close")


def test_with_services_they_run_around_the_call(pipe: Pipeline) -> None:
    service = Service()
    pipe.add_service(service)

    def tool(args: dict[str, Any]) -> str:
        service.log.append("tool")
        return "ran"

    assert pipe.call_tool_sync("read", {}, call=tool).output == "ran"
    assert service.log == ["start", "tool", "close"]


# -- where it cannot run ---------------------------------------------------------------------


async def test_inside_a_running_event_loop_it_says_to_await(pipe: Pipeline) -> None:
    ran: list[dict[str, Any]] = []

    with pytest.raises(RuntimeError, match=LOOP_ERROR):
        pipe.call_tool_sync("read", {}, call=ran.append)

    assert ran == []


def test_inside_a_trio_run_it_says_to_await(pipe: Pipeline) -> None:
    async def main() -> None:
        pipe.call_tool_sync("read", {}, call=echo)

    with pytest.raises(RuntimeError, match=LOOP_ERROR):
        anyio.run(main, backend="trio")


async def test_entered_in_another_threads_loop_it_says_where_to_call(
    pipe: Pipeline, recorder: list[Any]
) -> None:
    pipe.subscribe(recorder.append, events={"tool_exec_end"})

    async with pipe:
        # a worker thread of the loop the pipeline is entered in: no loop runs there
        with pytest.raises(RuntimeError, match=r"entered in an event loop of another thread"):
            await anyio.to_thread.run_sync(lambda: pipe.call_tool_sync("read", {}, call=echo))
        # what the message suggests works
        result = await anyio.to_thread.run_sync(
            lambda: anyio.from_thread.run(
                lambda: pipe.call_tool("read", {"path": "x"}, call=echo, call_id="w1")
            )
        )

    assert result.output == {"path": "x"}
    assert [e.tool_call_id for e in recorder] == ["w1"]
