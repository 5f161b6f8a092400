"""PicoClaw's quick start, verbatim: the hook documentation's JSON config (only the
script's path changed, from /tmp/review_gate.py to the copy beside it) loads with
``Pipeline.from_config`` and ``interpose check``, and the documentation's
``review_gate.py``, unchanged, runs behind it as a real child process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from interpose import Pipeline, ProcessHook
from interpose.cli import main
from interpose.config import load_config

FILES = Path(__file__).parent / "files"
QUICKSTART = FILES / "quickstart.json"
# the log file the config names (PicoClaw's documented path, left as it is)
LOG = Path("/tmp/picoclaw-hook-review-gate.log")


class Tool:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, args: dict[str, Any]) -> str:
        self.calls.append(dict(args))
        return f"ran {sorted(args.items())}"


def log_size() -> int:
    return LOG.stat().st_size if LOG.exists() else 0


def log_since(start: int) -> list[str]:
    """The log's lines written since it was ``start`` bytes long."""
    return LOG.read_bytes()[start:].decode("utf-8").splitlines()


def hook_of(pipe: Pipeline) -> ProcessHook:
    hooks = [service for service in pipe._services if isinstance(service, ProcessHook)]
    assert len(hooks) == 1
    return hooks[0]


def test_the_file_is_picoclaws_quick_start_with_only_the_script_path_changed() -> None:
    data = json.loads(QUICKSTART.read_text(encoding="utf-8"))
    process = data["hooks"]["processes"]["py_review_gate"]
    assert process["command"] == ["python3", "review_gate.py"]
    process["command"] = ["python3", "/tmp/review_gate.py"]
    assert data == {
        "hooks": {
            "enabled": True,
            "processes": {
                "py_review_gate": {
                    "enabled": True,
                    "priority": 100,
                    "transport": "stdio",
                    "command": ["python3", "/tmp/review_gate.py"],
                    "observe": ["tool_exec_start", "tool_exec_end", "tool_exec_skipped"],
                    "intercept": ["before_tool", "approve_tool"],
                    "env": {"PICOCLAW_HOOK_LOG_FILE": "/tmp/picoclaw-hook-review-gate.log"},
                }
            },
        }
    }


def test_interpose_check_accepts_it_and_shows_the_picoclaw_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["check", str(QUICKSTART)]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.split("stack (execution order):\n")[1].splitlines()]
    assert [row[2:4] for row in rows[1:6]] == [
        ["1000", "builtin:command-safety-guard"],
        ["999", "builtin:security-audit"],
        ["998", "process:py_review_gate:before_tool"],
        ["1000", "builtin:command-safety-guard.ask"],  # the guard's approver, as the guard
        ["998", "process:py_review_gate:approve_tool"],
    ]
    assert (
        "priority order: picoclaw (builtins before process hooks, lower priority first, "
        "ties by name), as interpose priorities:\n"
        "  1. builtin command-safety-guard: picoclaw priority -100 (unset: minus its default)"
        " -> priority 1000\n"
        "  2. builtin security-audit: picoclaw priority -99 (unset: minus its default)"
        " -> priority 999\n"
        "  3. process py_review_gate: picoclaw priority 100 -> priority 998\n"
    ) in out
    config = load_config(QUICKSTART)
    assert config.hooks.priority_order == "picoclaw"  # set because the file is PicoClaw's
    assert config.hooks.processes["py_review_gate"].transport == "stdio"


async def test_review_gate_runs_unchanged_behind_it() -> None:
    pipe = Pipeline.from_config(QUICKSTART)
    hook = hook_of(pipe)
    # PicoClaw's order: the builtin guards (in-process) run before the process hook
    order = [reg.id for reg in pipe.registry.get("tool.before", tool="exec")]
    assert order == ["builtin:command-safety-guard", "process:py_review_gate:before_tool"]
    start = log_size()
    tool = Tool()
    with anyio.fail_after(20):
        async with pipe:
            await hook.wait_ready()
            listed = await pipe.call_tool("bash", {"command": "ls"}, call=tool, call_id="c1")
            wiped = await pipe.call_tool("exec", {"command": "rm -rf /"}, call=tool, call_id="c2")
            read = await pipe.call_tool("read", {"path": "notes.txt"}, call=tool, call_id="c3")
    # its decisions, as the pipeline applied them: pass the args through, allow
    assert (listed.status, listed.output) == ("ok", "ran [('command', 'ls')]")
    assert (read.status, read.output) == ("ok", "ran [('path', 'notes.txt')]")
    # the guard ran first and blocked: the hook was not asked about that call
    assert wiped.status == "blocked"
    assert wiped.details["decided_by"] == "builtin:command-safety-guard"
    assert tool.calls == [{"command": "ls"}, {"path": "notes.txt"}]
    assert hook.child_name == "py_review_gate"
    assert (hook.stats.failed, hook.stats.invalid_lines, hook.stats.unknown_ids) == (0, 0, 0)
    # hook.event notifications are answered anyway (with a null id): ignored, counted
    assert hook.stats.events_sent == 6
    log = log_since(start)
    assert log[:2] == ["review_gate started", "hello: protocol_version=1"]
    calls = [line for line in log if not line.startswith("event: ")]
    assert calls[2:] == [
        "before_tool: exec",
        "approve_tool: exec → allow",
        "before_tool: read",
        "approve_tool: read → allow",
        "review_gate exiting",  # it saw its stdin end, and left by itself
    ]
    events = [line.split(" — ")[0] for line in log if line.startswith("event: ")]
    assert events == [
        "event: tool_exec_start",
        "event: tool_exec_end",
        "event: tool_exec_skipped",
        "event: tool_exec_end",
        "event: tool_exec_start",
        "event: tool_exec_end",
    ]
    first = json.loads(next(line for line in log if line.startswith("event: ")).split(" — ")[1])
    assert (first["tool_name"], first["tool_call_id"], first["raw_name"]) == ("exec", "c1", "bash")
