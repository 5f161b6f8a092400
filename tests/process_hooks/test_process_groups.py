"""What a process hook's child leaves behind: the child runs in a process group of its
own, and a grandchild it starts (holding the child's pipes, as an inherited subprocess
does) neither hides the child's exit nor outlives the child's generation -- over both
transports (see conftest.py).  And a pipeline called from another thread's event loop
fails the call with a reason, rather than hanging."""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from interpose import Pipeline, ToolResult
from interpose.bus.events import InterceptorFailed
from interpose.external import _process_group
from interpose.middleware.process import ProcessHook

pytestmark = pytest.mark.integration

CHILDREN = Path(__file__).parent / "children"


def misbehave(pids: Path, **options: Any) -> ProcessHook:
    settings: dict[str, Any] = {
        "tools": "exec",
        "timeout": 30.0,  # far beyond every bound below: nothing here waits for it
        "restart_backoff": (0.05, 0.5),
        "env": {"PIDS": str(pids)},
        **options,
    }
    return ProcessHook("m", [sys.executable, str(CHILDREN / "misbehave.py")], **settings)


def tool(args: dict[str, Any]) -> str:
    return f"ran {args}"


def grandchildren(pids: Path) -> list[int]:
    return [int(line) for line in pids.read_text().split()]


async def test_a_child_that_exits_leaving_a_grandchild_is_noticed_at_once(
    tmp_path: Path, wait_gone: Any
) -> None:
    pipe = Pipeline(builtins=False)
    pids = tmp_path / "pids"
    hook = misbehave(pids)
    hook.install(pipe)
    failures: list[InterceptorFailed] = []
    pipe.subscribe(failures.append, events={"interceptor_failed"})
    with anyio.fail_after(10):
        async with pipe:
            first_pid = hook.pid
            # the grandchild holds the child's stdout open: no EOF tells that the child
            # exited, yet the call fails long before the hook's 30 s timeout
            with anyio.fail_after(5):
                orphaned = await pipe.call_tool("exec", {"behave": "orphan"}, call=tool)
            # the grandchild died with the child's generation, before the restart
            await wait_gone(grandchildren(pids))
            await hook.wait_ready()
            later = await pipe.call_tool("exec", {"behave": "ok"}, call=tool)
            later_pid = hook.pid
    assert orphaned.status == "blocked"
    error = "ProcessHookError: process hook 'm': hook.before_tool: the process exited with code 3"
    assert orphaned.output["reason"] == f"interceptor 'process:m:before_tool' failed: {error}"
    assert [f.error for f in failures] == [error]
    assert (later.status, later.output) == ("responded", f"answered by {later_pid}")
    assert later_pid != first_pid
    assert (hook.stats.restarts, hook.stats.timeouts) == (1, 0)


async def test_without_a_pidfd_the_exit_is_noticed_all_the_same(
    tmp_path: Path, wait_gone: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # what happens where there is no pidfd (macOS, an old Linux kernel): the exit code
    # that asyncio's child watcher records is polled instead
    monkeypatch.setattr(_process_group, "_pidfd", lambda pid: None)
    pipe = Pipeline(builtins=False)
    pids = tmp_path / "pids"
    hook = misbehave(pids)
    hook.install(pipe)
    with anyio.fail_after(10):
        async with pipe:
            with anyio.fail_after(5):
                orphaned = await pipe.call_tool("exec", {"behave": "orphan"}, call=tool)
            await wait_gone(grandchildren(pids))
    assert orphaned.output["reason"].endswith("the process exited with code 3")


async def test_closing_the_pipeline_ends_what_the_child_started(
    tmp_path: Path, wait_gone: Any
) -> None:
    pipe = Pipeline(builtins=False)
    pids = tmp_path / "pids"
    hook = misbehave(pids)
    hook.install(pipe)
    with anyio.fail_after(10):
        async with pipe:
            pid = hook.pid
            results = [await pipe.call_tool("exec", {"behave": "spawn"}, call=tool)]
            results.append(await pipe.call_tool("exec", {"behave": "spawn"}, call=tool))
    assert [(r.status, r.output) for r in results] == [("responded", f"answered by {pid}")] * 2
    started = grandchildren(pids)
    assert len(started) == 2
    await wait_gone(started)
    assert hook.pid is None


async def test_a_restart_after_a_timeout_ends_what_the_stuck_child_started(
    tmp_path: Path, wait_gone: Any
) -> None:
    pipe = Pipeline(builtins=False)
    pids = tmp_path / "pids"
    hook = misbehave(pids, timeout=0.3)
    hook.install(pipe)
    with anyio.fail_after(10):
        async with pipe:
            pid = hook.pid
            spawned = await pipe.call_tool("exec", {"behave": "spawn"}, call=tool)
            # no reply and no other reply since: stuck, so it is restarted
            stuck = await pipe.call_tool("exec", {"behave": "sleep"}, call=tool)
            await wait_gone(grandchildren(pids))
            await hook.wait_ready()
            later_pid = hook.pid
            # the new child is in a group of its own: ending the old one spared it
            later = await pipe.call_tool("exec", {"behave": "ok"}, call=tool)
    assert spawned.status == "responded"
    assert stuck.status == "blocked"
    assert "no reply within 0.3s" in stuck.output["reason"]
    assert later_pid != pid
    assert (later.status, later.output) == ("responded", f"answered by {later_pid}")


async def test_a_call_from_another_threads_event_loop_fails_instead_of_hanging(
    tmp_path: Path,
) -> None:
    pipe = Pipeline(builtins=False)
    hook = misbehave(tmp_path / "pids", timeout=5.0)
    hook.install(pipe)
    failures: list[InterceptorFailed] = []
    pipe.subscribe(failures.append, events={"interceptor_failed"})

    def elsewhere() -> tuple[str, ToolResult]:
        # what a user does who hands the pipeline to a worker thread with a loop of its
        # own; bounded there too, so that a hang cannot outlive the test
        async def call() -> ToolResult:
            return await asyncio.wait_for(
                pipe.call_tool("exec", {"behave": "ok"}, call=tool), timeout=8
            )

        return threading.current_thread().name, asyncio.run(call())

    with anyio.fail_after(10):
        async with pipe:
            pid = hook.pid
            with anyio.fail_after(2):  # far below the hook's 5 s timeout
                thread, result = await anyio.to_thread.run_sync(elsewhere, abandon_on_cancel=True)
            # the hook still serves its own loop
            here = await pipe.call_tool("exec", {"behave": "ok"}, call=tool)
    assert result.status == "blocked"
    error = (
        f"ProcessHookError: process hook 'm': hook.before_tool: called from thread {thread!r}, "
        "but the hook runs in the event loop of thread 'MainThread', which entered its "
        "pipeline; its child answers only there"
    )
    assert result.output["reason"].startswith(
        f"interceptor 'process:m:before_tool' failed: {error}"
    )
    assert [f.error[: len(error)] for f in failures] == [error]
    assert (here.status, here.output) == ("responded", f"answered by {pid}")
    assert (hook.stats.failed, hook.stats.restarts) == (1, 0)
