"""``interpose inbox`` as a real child process over a real redis-server: an agent's
waiting call (a pipeline in this process, its asks in the same Redis) resumes when a
script decides it through the command's API with the token; the decision reaches the
event stream (fed by the Redis stream) and the command's log names the approver; SIGTERM
stops it (exit 0); a Redis that does not answer is one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from inbox_helpers import TIMEOUT, TOKEN, Inbox, agent, asked, run_command

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fleet"))
from redis_helpers import RedisServer, free_port

from interpose import ToolResult
from interpose.approvals.redis import RedisApprovalStore

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("given", ["flags", "config"])
async def test_a_script_decides_through_the_command_and_the_agent_resumes(
    redis_server: RedisServer, tmp_path: Path, given: str
) -> None:
    prefix = f"test:{uuid.uuid4().hex[:10]}"
    store = RedisApprovalStore(redis_server.url, prefix=prefix)
    if given == "flags":
        command = Inbox("--redis", redis_server.url, "--redis-prefix", prefix)
    else:  # the agents' own config file names the store
        config = tmp_path / "interpose.toml"
        config.write_text(
            f'[approvals]\nstore = "redis"\nurl = "{redis_server.url}"\nprefix = "{prefix}"\n',
            encoding="utf-8",
        )
        command = Inbox("--config", str(config))
    pipe = agent(tmp_path, store)
    ran: list[str] = []
    results: list[ToolResult] = []
    seen: list[dict[str, Any]] = []
    try:
        url = await anyio.to_thread.run_sync(command.wait_url)
        bearer = {"authorization": f"Bearer {TOKEN}"}
        with anyio.fail_after(TIMEOUT * 2):
            async with (
                httpx2.AsyncClient(base_url=url, headers=bearer, timeout=TIMEOUT) as http,
                http.stream("GET", "/api/events") as events,
                anyio.create_task_group() as tg,
            ):
                lines = events.aiter_lines()
                assert (await anext(lines)).startswith(":")  # the Redis stream is followed

                async def waiting_call() -> None:
                    results.append(await run_command(pipe, "git push origin main", ran, "c1"))

                tg.start_soon(waiting_call)
                waiting = await asked(store, "c1")
                listed = (await http.get("/api/requests")).json()["requests"]
                assert [r["id"] for r in listed] == [waiting.id]
                assert (await http.get("/api/requests")).status_code == 200
                unauthorized = await http.get("/api/requests", headers={"authorization": ""})
                assert unauthorized.status_code == 401
                decided = await http.post(
                    f"/api/requests/{waiting.id}/decide", json={"decision": "approve"}
                )
                assert decided.status_code == 200, decided.text
                async for line in lines:
                    if line.startswith("data: "):
                        seen.append(json.loads(line[len("data: ") :]))
                    if any(change["kind"] == "request_decided" for change in seen):
                        break
    finally:
        code = command.stop()
        await store.aclose()
    assert code == 0, "".join(command.lines)
    assert [r.status for r in results] == ["ok"]
    assert ran == ["git push origin main"]
    decision = next(c for c in seen if c["kind"] == "request_decided")["request"]
    assert (decision["state"], decision["decided_by"]) == ("approved", "token@127.0.0.1")
    logged = "".join(command.lines)
    assert f"request {waiting.id} (exec): approved by token@127.0.0.1" in logged


def test_a_redis_that_does_not_answer_is_one_line_and_exit_2() -> None:
    dead = f"redis://127.0.0.1:{free_port()}/0"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "interpose.cli",
            "inbox",
            "--listen",
            "127.0.0.1:0",
            "--redis",
            dead,
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("interpose inbox: RedisApprovalStore(")
    assert "does not answer" in done.stderr
    assert done.stderr.count("\n") == 1
    no_store = subprocess.run(
        [sys.executable, "-m", "interpose.cli", "inbox"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    assert no_store.returncode == 2
    assert "is needed" in no_store.stderr


def test_a_config_whose_approvals_are_in_memory_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "interpose.toml"
    config.write_text('[approvals]\nstore = "memory"\n', encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "interpose.cli", "inbox", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "not in Redis" in done.stderr
    assert done.stderr.count("\n") == 1
