"""``[approvals]`` in interpose.toml: the store it makes answers the pipeline's asks,
its values are checked (naming the field), and ``interpose check`` shows it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from approval_helpers import LIMIT

from interpose.approvals.memory import MemoryApprovalStore
from interpose.config import ConfigFileError, pipeline_from_file

HEAD = (
    '[hooks.defaults]\napproval_timeout_ms = 60000\n\n[permissions]\nask = ["Bash(git push:*)"]\n'
)


def write(tmp_path: Path, approvals: str) -> Path:
    path = tmp_path / "interpose.toml"
    path.write_text(HEAD + "\n[approvals]\n" + approvals)
    return path


async def test_a_memory_store_answers_the_asks(tmp_path: Path) -> None:
    pipe = pipeline_from_file(write(tmp_path, 'store = "memory"\ntimeout_ms = 5000\n'))
    handler: Any = pipe.human_approval
    store = handler.store
    assert isinstance(store, MemoryApprovalStore)
    assert handler.wait_seconds() == 5.0
    ran: list[str] = []

    def tool(args: dict[str, Any]) -> str:
        ran.append(args["command"])
        return "ok"

    async def approve() -> None:
        async for change in store.changes("0"):
            if change.kind == "request_created" and change.request is not None:
                await store.decide(change.request.id, "approve", approver="ops")
                return

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(approve)
            result = await pipe.call_tool("exec", {"command": "git push"}, call=tool)
    assert result.status == "ok"
    assert ran == ["git push"]


@pytest.mark.parametrize(
    ("table", "field", "problem"),
    [
        ("timeout_ms = 90000\n", "approvals.timeout_ms", "longer than hooks.defaults"),
        ('store = "redis"\nurl = "http://x"\n', "approvals.url", "not a Redis URL"),
        ('store = "disk"\n', "approvals.store", "expected one of"),
        ("timeout_ms = 0\n", "approvals.timeout_ms", "expected"),
        ('prefix = ""\n', "approvals.prefix", "expected"),
    ],
)
def test_bad_values_name_their_field(tmp_path: Path, table: str, field: str, problem: str) -> None:
    with pytest.raises(ConfigFileError) as caught:
        pipeline_from_file(write(tmp_path, table))
    assert caught.value.field == field
    assert problem in caught.value.problem


def test_check_shows_the_approval_configuration(tmp_path: Path) -> None:
    path = write(tmp_path, 'store = "redis"\nurl = "redis://:hunter2@127.0.0.1:6399/0"\n')
    proc = subprocess.run(
        [sys.executable, "-m", "interpose", "check", str(path)],
        capture_output=True,
        text=True,
        timeout=LIMIT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert (
        "approvals: store=RedisApprovalStore('redis://:***@127.0.0.1:6399/0', "
        "prefix='interpose:approvals') request timeout=60s"
    ) in proc.stdout
    assert "  approvers that may ask: permissions.ask" in proc.stdout
    assert "hunter2" not in proc.stdout
