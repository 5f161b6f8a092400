"""The child's life: handshake, restarts with backoff, environment, stderr, observed
events, many calls in flight, and a bounded shutdown -- with real child processes."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from interpose import Pipeline, ToolResult
from interpose.bus.events import InterceptorFailed
from interpose.middleware.process import INHERITED_ENV, ProcessHook, ProcessHookError

pytestmark = pytest.mark.integration

CHILDREN = Path(__file__).parent / "children"
ROOT = Path(__file__).resolve().parents[2]


def child(name: str) -> list[str]:
    return [sys.executable, str(CHILDREN / f"{name}.py")]


def tool(args: dict[str, Any]) -> str:
    return f"ran {args}"


@pytest.mark.parametrize("on_error", ["block", "skip"])
async def test_a_handshake_that_never_comes_fails_calls_until_a_restart_succeeds(
    tmp_path: Path, on_error: Any
) -> None:
    pipe = Pipeline(builtins=False)
    hook = ProcessHook(
        "late",
        child("late_hello"),
        on_error=on_error,
        handshake_timeout=0.3,
        restart_backoff=(0.5, 1.0),
        env={"STATE": str(tmp_path), "SILENT_STARTS": "1"},
    )
    hook.install(pipe)
    failures: list[InterceptorFailed] = []
    pipe.subscribe(failures.append, events={"interceptor_failed"})
    with anyio.fail_after(10):
        async with pipe:  # returns once the handshake has failed
            assert not hook.running
            with anyio.fail_after(0.2):  # while it is down, calls fail at once
                early = await pipe.call_tool("exec", {"command": "ls"}, call=tool)
            await hook.wait_ready()
            later = await pipe.call_tool("exec", {"command": "ls"}, call=tool)
            pid = hook.pid
    error = (
        "ProcessHookError: process hook 'late' is not running "
        "(handshake failed: no reply within 0.3s); "
    )
    if on_error == "block":
        assert early.status == "blocked"
        assert early.output["reason"].startswith(
            f"interceptor 'process:late:before_tool' failed: {error}"
        )
    else:
        assert (early.status, early.output) == ("ok", "ran {'command': 'ls'}")
    assert [(f.interceptor_id, f.policy) for f in failures] == [
        ("process:late:before_tool", on_error)
    ]
    assert failures[0].error.startswith(error)
    assert (later.status, later.output) == ("responded", f"answered by {pid}")
    # the second run answers (a third only if a loaded machine delayed the second)
    starts = hook.stats.starts
    assert starts >= 2
    assert hook.stats.restarts == starts - 1
    assert len(os.listdir(tmp_path)) == starts
    assert (tmp_path / f"run-{starts}").read_text() == str(pid)


async def test_a_handshake_with_another_protocol_version_is_refused() -> None:
    pipe = Pipeline(builtins=False)
    hook = ProcessHook(
        "m", child("misbehave"), env={"BROKEN_HELLO": "1"}, restart_backoff=(5.0, 5.0)
    )
    hook.install(pipe)
    with anyio.fail_after(10):
        async with pipe:
            result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)
    assert result.status == "blocked"
    assert (
        "process hook 'm' is not running (handshake failed: the child speaks "
        "protocol_version 2, this side speaks 1)" in result.output["reason"]
    )


async def test_a_program_that_cannot_be_executed_fails_the_pipeline_start(
    tmp_path: Path,
) -> None:
    script = tmp_path / "hook"
    script.write_text("this file has no #! line\n")
    script.chmod(0o755)
    pipe = Pipeline(builtins=False)
    hook = ProcessHook("broken", [str(script)])
    hook.install(pipe)
    with anyio.fail_after(10), pytest.raises(ProcessHookError, match="cannot start"):
        async with pipe:
            pytest.fail("the pipeline started")  # pragma: no cover
    assert not hook.running


async def test_a_child_that_keeps_dying_is_restarted_with_growing_bounded_delays() -> None:
    delays: list[str] = []
    fourth = anyio.Event()

    class Restarts(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "restarting in" in record.getMessage():
                delays.append(record.getMessage().rpartition(" ")[2])
                if len(delays) == 4:
                    fourth.set()

    logger = logging.getLogger("interpose.process.dying")
    handler = Restarts()
    logger.addHandler(handler)
    try:
        pipe = Pipeline(builtins=False)
        hook = ProcessHook(
            "dying",
            [sys.executable, "-c", "raise SystemExit(1)"],
            restart_backoff=(0.05, 0.2),
        )
        hook.install(pipe)
        with anyio.fail_after(10):
            async with pipe:
                await fourth.wait()
    finally:
        logger.removeHandler(handler)
    assert delays[:4] == ["0.05s", "0.1s", "0.2s", "0.2s"]
    assert hook.stats.starts >= 4


async def test_the_child_gets_a_minimal_environment_plus_what_is_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INTERPOSE_TEST_SECRET", "hunter2")
    record = tmp_path / "record.jsonl"
    pipe = Pipeline(builtins=False)
    hook = ProcessHook("gate", child("gate"), env={"RECORD": str(record), "HOOK_TOKEN": "t0k3n"})
    hook.install(pipe)
    with anyio.fail_after(10):
        async with pipe:
            pass
    env = json.loads(record.read_text(encoding="utf-8").splitlines()[0])["env"]
    assert "INTERPOSE_TEST_SECRET" not in env
    assert env["HOOK_TOKEN"] == "t0k3n"
    assert env["PATH"] == os.environ["PATH"]
    # LC_CTYPE may be set by the child's Python itself (PEP 538 locale coercion)
    assert set(env) <= {*INHERITED_ENV, "RECORD", "HOOK_TOKEN"}


async def test_stderr_lines_go_to_the_hooks_logger(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="interpose.process.gate")
    pipe = Pipeline(builtins=False)
    hook = ProcessHook("gate", child("gate"))
    hook.install(pipe)
    with anyio.fail_after(10):
        async with pipe:
            pid = hook.pid
    # closing waits for the child's stderr to end: every line has been logged
    lines = [
        (r.name, r.levelno, r.getMessage())
        for r in caplog.records
        if r.name == "interpose.process.gate" and "listening" in r.getMessage()
    ]
    assert lines == [("interpose.process.gate", logging.INFO, f"gate {pid} listening")]


async def test_observed_events_arrive_as_hook_event_notifications(tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    pipe = Pipeline(builtins=False)
    hook = ProcessHook(
        "gate",
        child("gate"),
        intercept=(),
        observe=["tool_exec_start", "tool_exec_end"],
        env={"RECORD": str(record)},
    )
    hook.install(pipe)
    with anyio.fail_after(10):
        async with pipe:
            await pipe.call_tool("exec", {"command": "ls"}, call=tool, call_id="c1")
            await pipe.call_tool("read", {"path": "x"}, call=tool, call_id="c2")
    # leaving `async with pipe` drains the bus, then closes the child's stdin: it has
    # read every notification before it exits
    lines = record.read_text(encoding="utf-8").splitlines()[1:]
    events = [json.loads(line) for line in lines if "hook.event" in line]
    assert all(e.keys() == {"jsonrpc", "method", "params"} for e in events)  # no id: no reply
    assert [(e["params"]["type"], e["params"]["data"]["tool_call_id"]) for e in events] == [
        ("tool_exec_start", "c1"),
        ("tool_exec_end", "c1"),
        ("tool_exec_start", "c2"),
        ("tool_exec_end", "c2"),
    ]
    end = events[1]["params"]["data"]
    assert (end["kind"], end["tool_name"], end["status"]) == ("tool_exec_end", "exec", "ok")
    assert (hook.stats.events_sent, hook.stats.events_dropped) == (4, 0)


async def test_a_hook_written_for_picoclaw_works_unchanged(tmp_path: Path) -> None:
    log_file = tmp_path / "review_gate.log"
    pipe = Pipeline(builtins=False)
    hook = ProcessHook(
        "py_review_gate",
        child("picoclaw_style"),
        intercept=["before_tool", "approve_tool"],
        observe=["tool_exec_start", "tool_exec_end", "tool_exec_skipped"],
        env={"PICOCLAW_HOOK_LOG_FILE": str(log_file)},
    )
    hook.install(pipe)
    with anyio.fail_after(10):
        async with pipe:
            first = await pipe.call_tool("exec", {"command": "ls"}, call=tool)
            second = await pipe.call_tool("read", {"path": "x"}, call=tool)
    assert (first.status, first.output) == ("ok", "ran {'command': 'ls'}")
    assert (second.status, second.output) == ("ok", "ran {'path': 'x'}")
    log = log_file.read_text(encoding="utf-8").splitlines()
    assert log[:4] == ["started", "hello 1", "before_tool exec", "approve_tool exec"]
    assert log[-1] == "exiting"  # it saw its stdin end and left by itself
    assert {"event tool_exec_start exec", "event tool_exec_end read"} <= set(log)
    assert hook.child_name == "py_review_gate"
    # its replies to notifications (id null) are ignored, not counted as failures
    stats = hook.stats
    assert (stats.failed, stats.unknown_ids, stats.invalid_lines) == (0, 0, 0)


async def test_calls_in_flight_together_each_get_their_own_answer() -> None:
    pipe = Pipeline(builtins=False)
    hook = ProcessHook("ooo", child("out_of_order"), env={"BATCH": "8"})
    hook.install(pipe)
    results: dict[int, ToolResult] = {}

    async def call(n: int) -> None:
        results[n] = await pipe.call_tool("exec", {"n": n}, call=lambda args: args)

    with anyio.fail_after(10):
        async with pipe:
            # the child answers only once all 8 are in, last first
            async with anyio.create_task_group() as tg:
                for n in range(8):
                    tg.start_soon(call, n)
            in_flight_after = hook.in_flight
    assert sorted(results) == list(range(8))
    assert all(r.output["n"] == n for n, r in results.items())
    assert sorted(r.output["answered"] for r in results.values()) == list(range(8))
    assert in_flight_after == 0
    assert (hook.stats.requests, hook.stats.failed) == (9, 0)  # 8 calls and the hello


async def test_closing_stops_a_child_that_ignores_its_stdin_and_sigterm() -> None:
    stubborn = (
        "import json, signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "hello = json.loads(sys.stdin.readline())\n"
        "print(json.dumps({'jsonrpc': '2.0', 'id': hello['id'],"
        " 'result': {'name': 'stubborn', 'protocol_version': 1}}), flush=True)\n"
        "while True:\n"
        "    time.sleep(1)\n"
    )
    pipe = Pipeline(builtins=False)
    hook = ProcessHook("stubborn", [sys.executable, "-c", stubborn])
    hook.install(pipe)
    with anyio.fail_after(10):
        async with pipe:
            pid = hook.pid
            assert hook.running
    assert pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped
    assert hook.pid is None


async def test_a_pipeline_can_be_entered_again_with_a_fresh_child() -> None:
    pipe = Pipeline(builtins=False)
    hook = ProcessHook("m", child("misbehave"))
    hook.install(pipe)
    outputs = []
    with anyio.fail_after(10):
        for _ in range(2):
            async with pipe:
                result = await pipe.call_tool("exec", {"behave": "ok"}, call=tool)
                outputs.append((result.output, hook.pid))
    (first, pid1), (second, pid2) = outputs
    assert (first, second) == (f"answered by {pid1}", f"answered by {pid2}")
    assert pid1 != pid2
    assert hook.stats.starts == 2


async def test_before_the_pipeline_is_entered_nothing_runs_and_waiting_is_refused() -> None:
    pipe = Pipeline(builtins=False)
    hook = ProcessHook("m", child("misbehave"))
    hook.install(pipe)
    with pytest.raises(RuntimeError, match="has services"):
        await pipe.call_tool("exec", {"behave": "ok"}, call=tool)
    with pytest.raises(ProcessHookError, match="process hook 'm' is not started"):
        await hook.wait_ready()
    assert hook.pid is None


async def test_the_example_review_gate_runs_as_a_process_hook(tmp_path: Path) -> None:
    log_file = tmp_path / "events.log"
    pipe = Pipeline(builtins=False)
    hook = ProcessHook(
        "review_gate",
        [sys.executable, str(ROOT / "examples" / "hooks" / "review_gate.py")],
        intercept=["before_tool", "approve_tool"],
        observe=["tool_exec_end"],
        env={"REVIEW_GATE_LOG": str(log_file)},
    )
    hook.install(pipe)
    with anyio.fail_after(10):
        async with pipe:
            forced = await pipe.call_tool("exec", {"command": "git push --force"}, call=tool)
            plain = await pipe.call_tool("exec", {"command": "git status"}, call=tool)
    assert forced.status == "blocked"
    assert plain.status == "ok"
    assert hook.stats.failed == 0
    assert log_file.read_text(encoding="utf-8").count("tool_exec_end") == 2
