"""Services run while the pipeline is entered: started in order, closed in reverse."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.abc
import pytest

from interpose import Pipeline


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
