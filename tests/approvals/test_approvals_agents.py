"""Durable approvals across real processes on one real redis-server: agent processes
(agent_worker.py) ask, this test process decides through the store API, and the
waiting calls resume; an edit is judged again in the agent; a grant lets the next
matching call pass; expiry denies; an agent killed by its pid and started again finds
its pending request; 1,000 pending requests from 10 processes are listed and decided,
none lost."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from approval_helpers import LIMIT, Agent, RedisServer

from interpose.approvals import ApprovalRecord, GrantSpec
from interpose.approvals.redis import RedisApprovalStore

pytestmark = pytest.mark.integration


@pytest.fixture
async def store(redis_server: RedisServer) -> AsyncIterator[RedisApprovalStore]:
    made = RedisApprovalStore(redis_server.url, prefix=f"test:{uuid.uuid4().hex[:10]}")
    try:
        yield made
    finally:
        await made.aclose()


async def start(
    store: RedisApprovalStore, agent: str, *calls: tuple[str, str], **spec: Any
) -> Agent:
    worker = await Agent.start(
        store.url,
        store.prefix,
        {"agent": agent, "calls": [{"id": i, "command": c} for i, c in calls], **spec},
    )
    await worker.until("ready")
    return worker


async def pending_of(store: RedisApprovalStore, agent: str, count: int = 1) -> list[ApprovalRecord]:
    """The agent's pending requests, once there are ``count`` (within LIMIT)."""
    with anyio.fail_after(LIMIT):
        async for _ in store.changes("0"):
            found = await store.list_pending(agent=agent)
            if len(found) >= count:
                return found
    raise AssertionError("unreachable")


async def test_an_ask_in_one_process_is_approved_from_another_and_resumes(
    store: RedisApprovalStore,
) -> None:
    a = await start(store, "agent-a", ("c1", "git push origin main"))
    b = await start(store, "agent-b", ("c1", "git push origin dev"))
    try:
        [asked_a] = await pending_of(store, "agent-a")
        [asked_b] = await pending_of(store, "agent-b")
        assert asked_a.args == {"command": "git push origin main"}
        assert asked_a.rule == "Bash(git push:*)"
        assert asked_a.id != asked_b.id
        await store.decide(asked_a.id, "approve", approver="alice@example.com")
        result = await a.until("call")
        assert result == {"call": "c1", "status": "ok", "reason": "", "ran": "git push origin main"}
        await store.decide(asked_b.id, "deny", approver="bob", reason="dev is frozen today")
        denied = await b.until("call")
        assert denied["status"] == "denied"
        assert denied["reason"] == "dev is frozen today"  # what the model sees
        assert denied["ran"] is None
        assert await a.finish() == 0
        assert await b.finish() == 0
    finally:
        await a.kill()
        await b.kill()


async def test_an_edited_call_is_judged_again_in_the_agent(store: RedisApprovalStore) -> None:
    # the dangerous edit is data: the tool only records its arguments
    dangerous = "git push origin main && rm -rf ~"
    worker = await start(
        store, "agent-e", ("c1", "git push origin main"), ("c2", "git push --force origin main")
    )
    try:
        [first] = await pending_of(store, "agent-e")
        await store.decide(first.id, "edit", approver="alice", args={"command": dangerous})
        blocked = await worker.until("call")
        assert blocked["status"] == "blocked"
        assert blocked["ran"] is None
        assert "rm -rf" in blocked["reason"]
        assert blocked["reason"].startswith("command-safety-guard")
        [second] = await pending_of(store, "agent-e")
        assert second.tool_call_id == "c2"
        await store.decide(
            second.id, "edit", approver="alice", args='{"command": "git push origin main"}'
        )
        ran = await worker.until("call")
        assert ran["status"] == "ok"
        assert ran["ran"] == "git push origin main"  # the edited arguments, not --force
        assert await worker.finish() == 0
        states = {r.tool_call_id: r.state for r in await store.list_requests(agent="agent-e")}
        assert states == {"c1": "edited", "c2": "edited"}  # asked once each: no re-ask
    finally:
        await worker.kill()


async def test_a_grant_lets_the_next_matching_call_pass_without_asking(
    store: RedisApprovalStore,
) -> None:
    worker = await start(store, "agent-g", ("c1", "git push origin a"), ("c2", "git push origin b"))
    try:
        [asked] = await pending_of(store, "agent-g")
        decided = await store.decide(
            asked.id, "approve", approver="alice", grant=GrantSpec(match="rule", scope="session")
        )
        await worker.until("done")
        calls = [line for line in worker.lines if "call" in line]
        assert calls == [
            {"call": "c1", "status": "ok", "reason": "", "ran": "git push origin a"},
            {"call": "c2", "status": "ok", "reason": "", "ran": "git push origin b"},
        ]
        [used] = [line for line in worker.lines if line.get("event") == "grant_used"]
        assert used["grant_id"] == decided.grant_id
        assert used["granted_by"] == "alice"
        assert await worker.finish() == 0
        assert len(await store.list_requests(agent="agent-g")) == 1  # c2 never asked
        assert (await store.counters())["Bash(git push:*)"]["granted"] == 1
    finally:
        await worker.kill()


async def test_expiry_denies(store: RedisApprovalStore) -> None:
    worker = await start(store, "agent-x", ("c1", "git push"), timeout=1.0)
    try:
        result = await worker.until("call")
        assert result["status"] == "denied"
        assert result["ran"] is None
        [record] = await store.list_requests(agent="agent-x")
        assert record.state == "expired"
        assert await worker.finish() == 0
    finally:
        await worker.kill()


async def test_a_killed_agent_restarted_finds_its_pending_request(
    store: RedisApprovalStore,
) -> None:
    first = await start(store, "agent-k", ("c1", "git push origin main"))
    try:
        [asked] = await pending_of(store, "agent-k")
        await first.until("event")  # it is waiting
        await first.kill()  # SIGKILL, by its pid
        assert first.process.returncode == -9
        assert (await store.get(asked.id)).pending
        again = await start(store, "agent-k", ("c1", "git push origin main"))
        try:
            found = await again.until("event")
            assert found == {
                "event": "approval_requested",
                "request_id": asked.id,
                "resumed": True,
                "grant_id": None,
                "granted_by": None,
            }
            assert len(await store.list_requests(agent="agent-k")) == 1  # the same request
            await store.decide(asked.id, "approve", approver="alice")
            result = await again.until("call")
            assert result["status"] == "ok"
            assert result["ran"] == "git push origin main"
            assert await again.finish() == 0
        finally:
            await again.kill()
    finally:
        await first.kill()


async def test_a_thousand_pending_requests_from_ten_processes(store: RedisApprovalStore) -> None:
    agents = [
        await start(
            store,
            f"load-{n}",
            *[(f"c{i}", f"git push origin b{i}") for i in range(100)],
            concurrent=True,
            timeout=120,
        )
        for n in range(10)
    ]
    try:
        created = 0
        with anyio.fail_after(90):
            async for change in store.changes("0"):
                created += change.kind == "request_created"
                if created == 1000:
                    break
        pending = await store.list_pending()
        assert len(pending) == 1000
        assert len({r.id for r in pending}) == 1000
        assert {r.agent_id for r in pending} == {f"load-{n}" for n in range(10)}
        assert [r.created for r in pending] == sorted((r.created for r in pending), reverse=True)
        for i, record in enumerate(pending):
            if i % 2:
                await store.decide(record.id, "deny", approver="loader", reason="odd")
            else:
                await store.decide(record.id, "approve", approver="loader")
        statuses: dict[str, int] = {}
        for worker in agents:
            done = await worker.until("done", 90)
            assert done == {"done": 100}
            for line in worker.lines:
                if "call" in line:
                    statuses[line["status"]] = statuses.get(line["status"], 0) + 1
        assert statuses == {"ok": 500, "denied": 500}
        assert await store.list_pending() == []
        counts = (await store.counters())["Bash(git push:*)"]
        assert (counts["asked"], counts["approved"], counts["denied"]) == (1000, 500, 500)
    finally:
        for worker in agents:
            await worker.kill()
