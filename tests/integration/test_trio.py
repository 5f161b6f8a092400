"""The pipeline and a process hook under trio (anyio's other backend): the hook talks
to its child over anyio's process streams there, with a reader task."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from interpose import Pipeline, ToolResult
from interpose.bus.events import InterceptorFailed
from interpose.middleware.command_hooks import CommandHook
from interpose.middleware.process import ProcessHook

pytestmark = pytest.mark.integration

MISBEHAVE = Path(__file__).resolve().parents[1] / "process_hooks" / "children" / "misbehave.py"


def tool(args: dict[str, Any]) -> str:
    return f"ran {args}"


def test_a_process_hook_serves_fails_and_restarts_under_trio() -> None:

    async def scenario() -> dict[str, Any]:
        pipe = Pipeline(builtins=False)
        hook = ProcessHook(
            "m",
            [sys.executable, str(MISBEHAVE)],
            tools="exec",
            timeout=0.5,
            restart_backoff=(0.05, 0.5),
        )
        hook.install(pipe)
        failures: list[InterceptorFailed] = []
        pipe.subscribe(failures.append, events={"interceptor_failed"})
        results: list[ToolResult] = []
        with anyio.fail_after(10):
            async with pipe:
                first_pid = hook.pid
                for behave in ("ok", "garbage", "ok", "exit"):
                    results.append(await pipe.call_tool("exec", {"behave": behave}, call=tool))
                await hook.wait_ready()
                results.append(await pipe.call_tool("exec", {"behave": "ok"}, call=tool))
                last_pid = hook.pid
        return {
            "results": results,
            "failures": failures,
            "pids": (first_pid, last_pid),
            "stats": hook.stats,
        }

    found = anyio.run(scenario, backend="trio")
    first_pid, last_pid = found["pids"]
    assert [(r.status, r.output) for r in found["results"]] == [
        ("responded", f"answered by {first_pid}"),
        ("blocked", found["results"][1].output),
        ("responded", f"answered by {first_pid}"),
        ("blocked", found["results"][3].output),
        ("responded", f"answered by {last_pid}"),
    ]
    assert [f.error for f in found["failures"]] == [
        "ProcessHookError: process hook 'm': hook.before_tool: reply is not valid JSON: "
        "JSON is malformed: invalid character (byte 4), in 'this is not json'",
        "ProcessHookError: process hook 'm': hook.before_tool: the process exited with code 3",
    ]
    assert last_pid != first_pid
    assert (found["stats"].starts, found["stats"].restarts) == (2, 1)


def test_what_hooks_leave_running_dies_with_them_under_trio(tmp_path: Path, wait_gone: Any) -> None:
    # a process hook's child that exits leaving a grandchild on its pipes, and a command
    # hook whose script leaves a job in the background: both noticed at the exit, both
    # leftovers killed with their process groups
    grandchild_pids = tmp_path / "grandchild"
    job_pids = tmp_path / "job"

    async def scenario() -> list[ToolResult]:
        pipe = Pipeline(builtins=False)
        ProcessHook(
            "m",
            [sys.executable, str(MISBEHAVE)],
            tools="exec",
            timeout=30.0,
            env={"PIDS": str(grandchild_pids)},
        ).install(pipe)
        line = 'sleep 600 & echo $! >"$HOOK_PIDS"; exit 0'
        CommandHook(line, allow=["read"], env={"HOOK_PIDS": str(job_pids)}).install(pipe)
        with anyio.fail_after(10):
            async with pipe:
                with anyio.fail_after(5):  # far below both hooks' timeouts
                    results = [
                        await pipe.call_tool("exec", {"behave": "orphan"}, call=tool),
                        await pipe.call_tool("read", {"path": "x"}, call=tool),
                    ]
                pids = [int(grandchild_pids.read_text()), int(job_pids.read_text())]
                await wait_gone(pids)
        return results

    orphaned, read = anyio.run(scenario, backend="trio")
    assert orphaned.status == "blocked"
    assert orphaned.output["reason"].endswith("the process exited with code 3")
    assert (read.status, read.output) == ("ok", "ran {'path': 'x'}")
