"""Services run while the pipeline is entered: started in order, closed in reverse."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import pytest

from interpose import Pipeline
from interpose.middleware.process import ProcessHook


def tool(args: dict[str, Any]) -> str:
    return "ran"


class Recorder:
    def __init__(self, name: str, log: list[str], *, fail_start: bool = False) -> None:
        self.name, self.log, self.fail_start = name, log, fail_start
        self.ticks = 0

    async def start(self, tg: anyio.abc.TaskGroup) -> None:
        if self.fail_start:
            raise OSError(f"{self.name} cannot start")
        self.log.append(f"start {self.name}")
        self._stop = anyio.Event()
        tg.start_soon(self._run)

    async def _run(self) -> None:
        await self._stop.wait()
        self.log.append(f"task of {self.name} ended")

    async def aclose(self) -> None:
        self.log.append(f"close {self.name}")
        self._stop.set()


async def test_services_start_in_order_and_close_in_reverse() -> None:
    log: list[str] = []
    pipe = Pipeline(builtins=False)
    pipe.add_service(Recorder("a", log))
    pipe.add_service(Recorder("b", log))
    with anyio.fail_after(5):
        async with pipe:
            log.append("body")
    assert log[:5] == ["start a", "start b", "body", "close b", "close a"]
    # their background tasks ended before `async with pipe` returned
    assert sorted(log[5:]) == ["task of a ended", "task of b ended"]


async def test_a_failing_start_closes_what_started_and_raises_itself() -> None:
    log: list[str] = []
    pipe = Pipeline(builtins=False)
    pipe.add_service(Recorder("a", log))
    pipe.add_service(Recorder("b", log, fail_start=True))
    with anyio.fail_after(5), pytest.raises(OSError, match="b cannot start"):
        async with pipe:
            log.append("body")  # pragma: no cover
    assert log == ["start a", "close a", "task of a ended"]
    # the pipeline can be entered again once the service is fixed
    pipe._services[1].fail_start = False  # type: ignore[attr-defined]
    async with pipe:
        pass


async def test_calls_need_the_pipeline_entered_and_services_cannot_join_late() -> None:
    pipe = Pipeline(builtins=False)
    pipe.add_service(Recorder("a", []))

    @pipe.intercept("tool.before")
    async def noop(inp: Any, out: Any) -> None:
        pass

    with pytest.raises(RuntimeError, match="has services"):
        await pipe.call_tool("exec", {"command": "ls"}, call=lambda a: "ok")
    async with pipe:
        result = await pipe.call_tool("exec", {"command": "ls"}, call=lambda a: "ok")
        assert result.output == "ok"
        with pytest.raises(RuntimeError, match="before entering"):
            pipe.add_service(Recorder("late", []))


async def test_a_deadline_around_the_pipeline_cancels_a_stuck_drain_after_the_grace() -> None:
    log: list[str] = []
    pipe = Pipeline(builtins=False, observer_timeout=None, drain_grace=0.2)
    pipe.add_service(Recorder("a", log))
    stuck_on: list[str] = []

    async def stuck(event: Any) -> None:
        stuck_on.append(event.tool_call_id)
        await anyio.Event().wait()

    sub = pipe.subscribe(stuck, events={"tool_exec_end"})
    with anyio.fail_after(5), anyio.move_on_after(0.1) as deadline:
        async with pipe:
            await pipe.call_tool("read", {}, call=lambda a: "ok", call_id="c1")
            await pipe.call_tool("read", {}, call=lambda a: "ok", call_id="c2")
    assert deadline.cancelled_caught
    # the observer got the first event and never finished it; the second one, still
    # queued when the grace ran out, is counted as dropped
    assert stuck_on == ["c1"]
    assert (sub.stats.published, sub.stats.delivered, sub.stats.dropped) == (2, 1, 1)
    # the service was closed all the same, and the pipeline can be entered again
    assert log[-1] == "close a"
    async with pipe:
        pass


class FailsToClose(Recorder):
    async def aclose(self) -> None:
        self.log.append(f"close {self.name}")
        self._stop.set()
        raise OSError(f"{self.name} cannot close")


async def test_a_service_that_fails_to_close_does_not_keep_the_others_running() -> None:
    log: list[str] = []
    pipe = Pipeline(builtins=False)
    pipe.add_service(Recorder("a", log))
    pipe.add_service(FailsToClose("b", log))
    pipe.add_service(Recorder("c", log))
    with anyio.fail_after(5), pytest.raises(OSError, match="b cannot close"):
        async with pipe:
            pass
    assert [line for line in log if line.startswith("close")] == ["close c", "close b", "close a"]
    assert sorted(line for line in log if line.startswith("task")) == [
        "task of a ended",
        "task of b ended",
        "task of c ended",
    ]


# -- a cancelled exit, with a real process hook ----------------------------------------------

CHILDREN = Path(__file__).resolve().parents[1] / "process_hooks" / "children"


def gate_hook() -> ProcessHook:
    """A process hook (a real child) that lets every tool call through."""
    return ProcessHook("gate", [sys.executable, str(CHILDREN / "gate.py")])


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.integration
async def test_a_cancelled_exit_delivers_the_backlog_closes_the_hook_and_can_reenter() -> None:
    pipe = Pipeline(builtins=False, observer_timeout=None)
    hook = gate_hook()
    hook.install(pipe)
    release = anyio.Event()
    seen: list[str] = []

    async def slow(event: Any) -> None:
        await release.wait()  # holds the first event until the body has been cancelled
        seen.append(event.tool_call_id)

    sub = pipe.subscribe(slow, events={"tool_exec_end"}, overflow="block")
    with anyio.fail_after(20):
        with anyio.CancelScope() as scope:
            async with pipe:
                for _ in range(80):
                    result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)
                    assert result.status == "ok"
                pid = hook.pid
                backlog = sub.stats.published - sub.stats.delivered
                scope.cancel()
                release.set()
                await anyio.lowlevel.checkpoint()  # the cancellation lands here
                pytest.fail("not cancelled")  # pragma: no cover
        assert scope.cancelled_caught
        # 79 events were still queued when the body was cancelled: all were delivered
        assert backlog == 79
        assert len(seen) == 80
        assert (sub.stats.delivered, sub.stats.dropped) == (80, 0)
        # the child was stopped, and the pipeline can be entered again with a new one
        assert pid is not None
        assert not hook.running
        assert gone(pid)
        async with pipe:
            again = await pipe.call_tool("exec", {"command": "ls"}, call=tool)
            assert hook.pid not in (None, pid)
    assert again.status == "ok"
    assert hook.stats.starts == 2


@pytest.mark.integration
async def test_a_stuck_observer_holds_a_cancelled_exit_for_the_grace_only() -> None:
    pipe = Pipeline(builtins=False, observer_timeout=None, drain_grace=0.3)
    hook = gate_hook()
    hook.install(pipe)

    async def stuck(event: Any) -> None:
        await anyio.Event().wait()

    sub = pipe.subscribe(stuck, events={"tool_exec_end"})
    with anyio.fail_after(10):
        with anyio.CancelScope() as scope:
            async with pipe:
                for _ in range(3):
                    await pipe.call_tool("exec", {"command": "ls"}, call=tool)
                pid = hook.pid
                scope.cancel()
                await anyio.lowlevel.checkpoint()
        assert scope.cancelled_caught
        # one event stuck in the observer, the two behind it given up on and counted
        assert (sub.stats.published, sub.stats.delivered, sub.stats.dropped) == (3, 1, 2)
        assert pid is not None
        assert gone(pid)
        assert not hook.running
