"""A fleet on one real redis-server: agent processes (tests/approvals/agent_worker.py)
ask, ``interpose inbox`` (a child process) serves their requests, and every decision is
made through its HTTP API, as a person's page or a script makes it: an ask approved in
one agent resumes its call while another agent's is denied; an edit is judged again in
the agent (a dangerous one blocked by the guard there, a benign one run as edited); a
grant lets the next matching call pass without asking; a request nobody decides
expires and denies; an agent killed by its pid and started again finds its pending
request and resumes when the inbox approves it."""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from inbox_helpers import TIMEOUT, TOKEN, Inbox

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "approvals"))
from approval_helpers import LIMIT, Agent, RedisServer

pytestmark = pytest.mark.integration


class Fleet:
    """The inbox command on one key prefix of the Redis server, an HTTP client on it
    with the token, and the agents started on the same prefix."""

    def __init__(self, server: RedisServer, prefix: str, http: httpx2.AsyncClient) -> None:
        self.server = server
        self.prefix = prefix
        self.http = http
        self.agents: list[Agent] = []

    async def agent(self, name: str, *calls: tuple[str, str], **spec: Any) -> Agent:
        worker = await Agent.start(
            self.server.url,
            self.prefix,
            {"agent": name, "calls": [{"id": i, "command": c} for i, c in calls], **spec},
        )
        self.agents.append(worker)
        await worker.until("ready")
        return worker

    async def pending(
        self, agent: str, count: int = 1, state: str = "pending"
    ) -> list[dict[str, Any]]:
        """The agent's requests in ``state`` as the inbox lists them, once there are
        ``count`` (polled, within LIMIT)."""
        with anyio.fail_after(LIMIT):
            while True:
                query = {"agent": agent, "state": state}
                found = await self.http.get("/api/requests", params=query)
                assert found.status_code == 200, found.text
                requests: list[dict[str, Any]] = found.json()["requests"]
                if len(requests) >= count:
                    return requests
                await anyio.sleep(0.05)

    async def decide(self, request_id: str, **body: Any) -> dict[str, Any]:
        answer = await self.http.post(f"/api/requests/{request_id}/decide", json=body)
        assert answer.status_code == 200, answer.text
        decided: dict[str, Any] = answer.json()
        return decided

    async def request(self, request_id: str) -> dict[str, Any]:
        answer = await self.http.get(f"/api/requests/{request_id}")
        assert answer.status_code == 200, answer.text
        found: dict[str, Any] = answer.json()
        return found


@pytest.fixture
async def fleet(redis_server: RedisServer) -> AsyncIterator[Fleet]:
    prefix = f"fleet:{uuid.uuid4().hex[:10]}"
    inbox = Inbox("--redis", redis_server.url, "--redis-prefix", prefix)
    made: Fleet | None = None
    try:
        url = await anyio.to_thread.run_sync(inbox.wait_url)
        bearer = {"authorization": f"Bearer {TOKEN}"}
        async with httpx2.AsyncClient(base_url=url, headers=bearer, timeout=TIMEOUT) as http:
            made = Fleet(redis_server, prefix, http)
            yield made
    finally:
        if made is not None:
            for worker in made.agents:
                await worker.kill()
        code = inbox.stop()
    assert code == 0, "".join(inbox.lines)


async def test_an_ask_approved_in_the_inbox_resumes_while_another_agent_is_denied(
    fleet: Fleet,
) -> None:
    a = await fleet.agent("agent-a", ("c1", "git push origin main"))
    b = await fleet.agent("agent-b", ("c1", "git push origin dev"))
    [asked_a] = await fleet.pending("agent-a")
    [asked_b] = await fleet.pending("agent-b")
    assert asked_a["args"] == {"command": "git push origin main"}
    assert asked_a["rule"] == "Bash(git push:*)"
    await fleet.decide(asked_a["id"], decision="approve")
    assert await a.until("call") == {
        "call": "c1",
        "status": "ok",
        "reason": "",
        "ran": "git push origin main",
    }
    await fleet.decide(asked_b["id"], decision="deny", reason="dev is frozen today")
    denied = await b.until("call")
    assert (denied["status"], denied["reason"], denied["ran"]) == (
        "denied",
        "dev is frozen today",  # what the model sees
        None,
    )
    decided = await fleet.request(asked_a["id"])
    assert (decided["state"], decided["decided_by"]) == ("approved", "token@127.0.0.1")
    assert await a.finish() == 0
    assert await b.finish() == 0


async def test_an_edit_made_in_the_inbox_is_judged_again_in_the_agent(fleet: Fleet) -> None:
    # the dangerous edit is data: the agent's tool only records its arguments
    dangerous = "git push origin main && rm -rf ~"
    worker = await fleet.agent(
        "agent-e", ("c1", "git push origin main"), ("c2", "git push --force origin main")
    )
    [first] = await fleet.pending("agent-e")
    await fleet.decide(first["id"], decision="edit", args={"command": dangerous})
    blocked = await worker.until("call")
    assert (blocked["status"], blocked["ran"]) == ("blocked", None)
    assert blocked["reason"].startswith("command-safety-guard")
    [second] = await fleet.pending("agent-e")
    assert second["tool_call_id"] == "c2"
    await fleet.decide(second["id"], decision="edit", args={"command": "git push origin main"})
    ran = await worker.until("call")
    assert (ran["status"], ran["ran"]) == ("ok", "git push origin main")  # not --force
    assert await worker.finish() == 0


async def test_a_grant_made_in_the_inbox_lets_the_next_matching_call_pass(fleet: Fleet) -> None:
    worker = await fleet.agent("agent-g", ("c1", "git push origin a"), ("c2", "git push origin b"))
    [asked] = await fleet.pending("agent-g")
    decided = await fleet.decide(
        asked["id"], decision="approve", grant={"match": "rule", "scope": "session", "ttl": 3600}
    )
    await worker.until("done")
    calls = [line for line in worker.lines if "call" in line]
    assert [(c["call"], c["status"], c["ran"]) for c in calls] == [
        ("c1", "ok", "git push origin a"),
        ("c2", "ok", "git push origin b"),
    ]
    [used] = [line for line in worker.lines if line.get("event") == "grant_used"]
    assert used["grant_id"] == decided["grant_id"]
    assert used["granted_by"] == "token@127.0.0.1"
    assert len(await fleet.pending("agent-g", state="all")) == 1  # c2 never asked
    assert await worker.finish() == 0


async def test_a_request_nobody_decides_expires_and_denies(fleet: Fleet) -> None:
    worker = await fleet.agent("agent-x", ("c1", "git push"), timeout=1.0)
    result = await worker.until("call")
    assert (result["status"], result["ran"]) == ("denied", None)
    [expired] = await fleet.pending("agent-x", state="all")
    assert expired["state"] == "expired"
    assert await worker.finish() == 0


async def test_a_killed_agent_restarted_resumes_when_the_inbox_approves(fleet: Fleet) -> None:
    first = await fleet.agent("agent-k", ("c1", "git push origin main"))
    [asked] = await fleet.pending("agent-k")
    await first.until("event")  # it is waiting
    await first.kill()  # SIGKILL, by its pid
    assert first.process.returncode == -9
    assert (await fleet.request(asked["id"]))["state"] == "pending"
    again = await fleet.agent("agent-k", ("c1", "git push origin main"))
    found = await again.until("event")
    assert (found["request_id"], found["resumed"]) == (asked["id"], True)
    await fleet.decide(asked["id"], decision="approve")
    result = await again.until("call")
    assert (result["status"], result["ran"]) == ("ok", "git push origin main")
    assert await again.finish() == 0
