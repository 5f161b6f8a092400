"""The approval store's contract, held by both stores: the in-memory one and the Redis
one on a real redis-server: submit is idempotent, decisions are atomic and refuse what
is stale or malformed, expiry happens on its own, waits resume on a decision made
elsewhere, grants match only what they were made from, changes stream in order."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import msgspec
import pytest
from approval_helpers import LIMIT, RedisServer

from interpose.approvals import (
    AlreadyDecided,
    ApprovalRecord,
    ApprovalStore,
    Change,
    GrantSpec,
    InvalidEdit,
    MemoryApprovalStore,
    UnknownGrant,
    UnknownRequest,
    args_hash,
    request_id,
)
from interpose.approvals.redis import RedisApprovalStore


class Clock:
    """The stores' clock: the time, plus ``ahead`` seconds (a test moves time on)."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def __call__(self) -> float:
        return time.time() + self.ahead


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest, clock: Clock) -> AsyncIterator[ApprovalStore]:
    made: ApprovalStore
    if request.param == "memory":
        made = MemoryApprovalStore(clock=clock)
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        made = RedisApprovalStore(server.url, prefix=f"test:{uuid.uuid4().hex[:10]}", clock=clock)
    try:
        yield made
    finally:
        await made.aclose()


def ask(
    call_id: str = "c1",
    *,
    agent: str = "a1",
    session: str = "s1",
    command: str = "git push",
    expires_in: float = 60.0,
    rule: str = "Bash(git push:*)",
    principal: dict[str, Any] | None = None,
    created: float | None = None,
) -> ApprovalRecord:
    args = {"command": command}
    hashed = args_hash(args)
    now = time.time() if created is None else created
    return ApprovalRecord(
        id=request_id(agent, session, call_id, hashed),
        tool_name="exec",
        args=args,
        args_hash=hashed,
        agent_id=agent,
        session_key=session,
        tool_call_id=call_id,
        asked_by="permissions.ask",
        rule=rule,
        reason="permissions: approval asked",
        principal=principal,
        created=now,
        expires=now + expires_in,
    )


def test_the_hash_is_canonical_and_the_id_is_the_calls() -> None:
    assert args_hash({"b": 1, "a": [1, "é"]}) == args_hash({"a": [1, "é"], "b": 1})
    assert args_hash({"a": 1}) != args_hash({"a": 2})
    h = args_hash({"a": 1})
    assert request_id("a", "s", "c", h) == request_id("a", "s", "c", h)
    assert request_id("a", "s", "c", h) != request_id("a", "s", "c2", h)


async def test_submit_is_idempotent_and_lists_newest_first(store: ApprovalStore) -> None:
    first = await store.submit(ask("c1", created=time.time() - 2))
    again = await store.submit(ask("c1"))  # a restarted agent: the same request
    assert again == first
    await store.submit(ask("c2", agent="a2", created=time.time() - 1))
    await store.submit(ask("c3", command="git push --tags"))
    pending = await store.list_pending()
    assert [r.tool_call_id for r in pending] == ["c3", "c2", "c1"]
    assert [r.tool_call_id for r in await store.list_pending(agent="a1")] == ["c3", "c1"]
    assert await store.list_pending(tool="read") == []
    assert len(await store.list_pending(limit=2)) == 2
    assert (await store.counters())["Bash(git push:*)"]["asked"] == 3


async def test_decisions_are_checked_and_recorded(store: ApprovalStore) -> None:
    a, b, c = [await store.submit(ask(f"c{i}")) for i in range(3)]
    with pytest.raises(UnknownRequest):
        await store.get("apr_missing")
    with pytest.raises(UnknownRequest):
        await store.decide("apr_missing", "approve", approver="alice")
    with pytest.raises(ValueError, match="approver"):
        await store.decide(a.id, "approve", approver="")
    with pytest.raises(ValueError, match="unknown action"):
        await store.decide(a.id, "maybe", approver="alice")  # type: ignore[arg-type]
    for bad in ("{", "[1]", None, '"text"'):
        with pytest.raises(InvalidEdit):
            await store.decide(a.id, "edit", approver="alice", args=bad)
    with pytest.raises(ValueError, match="grant"):
        await store.decide(a.id, "deny", approver="alice", grant=GrantSpec())
    assert (await store.get(a.id)).pending  # nothing changed

    approved = await store.decide(a.id, "approve", approver="alice")
    assert approved.state == "approved"
    assert approved.decided_by == "alice"
    assert approved.decided_at is not None
    with pytest.raises(AlreadyDecided):
        await store.decide(a.id, "deny", approver="bob")
    denied = await store.decide(b.id, "deny", approver="bob", reason="too risky")
    assert denied.decision_reason == "too risky"
    edited = await store.decide(c.id, "edit", approver="carol", args='{"command": "git push -n"}')
    assert edited.state == "edited"
    assert edited.edited_args == {"command": "git push -n"}
    assert (await store.get(c.id)) == edited
    assert await store.list_pending() == []
    counts = (await store.counters())["Bash(git push:*)"]
    assert (counts["approved"], counts["denied"], counts["edited"]) == (1, 1, 1)


async def test_racing_decisions_one_wins(store: ApprovalStore) -> None:
    record = await store.submit(ask())
    outcomes: list[str] = []

    async def decide(who: str) -> None:
        try:
            await store.decide(record.id, "approve", approver=who)
            outcomes.append("won")
        except AlreadyDecided:
            outcomes.append("lost")

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            for i in range(8):
                tg.start_soon(decide, f"p{i}")
    assert sorted(outcomes) == ["lost"] * 7 + ["won"]


async def test_expiry_and_waits(store: ApprovalStore) -> None:
    short = await store.submit(ask("c1", expires_in=0.4))
    start = time.monotonic()
    with anyio.fail_after(LIMIT):
        expired = await store.wait(short.id)
    assert expired.state == "expired"
    assert 0.3 < time.monotonic() - start < 5
    with pytest.raises(AlreadyDecided):
        await store.decide(short.id, "approve", approver="late")
    assert (await store.expire(short.id)).state == "expired"

    long = await store.submit(ask("c2"))
    waited: list[str] = []
    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:

            async def wait() -> None:
                waited.append((await store.wait(long.id)).state)

            tg.start_soon(wait)
            await anyio.wait_all_tasks_blocked()  # the waiter waits
            assert waited == []
            await store.decide(long.id, "approve", approver="alice")
    assert waited == ["approved"]


async def test_grants_are_never_wider_than_the_request(store: ApprovalStore, clock: Clock) -> None:
    shown = await store.submit(ask("c1", principal={"sub": "bot-1"}))
    decided = await store.decide(
        shown.id, "approve", approver="alice", grant=GrantSpec(match="rule", scope="session")
    )
    grant = await store.get_grant(decided.grant_id)
    assert (grant.rule, grant.agent_id, grant.session_key) == ("Bash(git push:*)", "a1", "s1")
    assert grant.principal_sub == "bot-1"
    assert grant.granted_by == "alice"
    same = ask("c2", command="git push origin x", principal={"sub": "bot-1"})
    assert await store.match_grant(same) == grant
    for other in (
        ask("c3", session="s2", principal={"sub": "bot-1"}),  # another session
        ask("c4", agent="a2", principal={"sub": "bot-1"}),  # another agent
        ask("c5", principal={"sub": "bot-2"}),  # another principal
        ask("c6", rule="Bash(rm:*)", principal={"sub": "bot-1"}),  # another rule
        ask("c11"),  # no principal
        msgspec.structs.replace(same, asked_by="another-approver"),  # another approver
    ):
        assert await store.match_grant(other) is None
    args_only = await store.submit(ask("c7", session="s9"))
    by_args = await store.decide(
        args_only.id,
        "approve",
        approver="bob",
        grant=GrantSpec(match="args", scope="agent", ttl=0.3),
    )
    assert await store.match_grant(ask("c8", session="s10")) is not None  # same args, agent
    assert await store.match_grant(ask("c9", command="git push -f")) is None
    clock.ahead = 0.5
    assert await store.match_grant(ask("c10", session="s10")) is None  # the ttl is over
    assert by_args.grant_id not in {g.id for g in await store.grants()}
    revoked = await store.revoke(grant.id, by="alice")
    assert revoked.revoked_by == "alice"
    assert await store.match_grant(same) is None
    with pytest.raises(UnknownGrant):
        await store.revoke("grt_missing", by="alice")
    assert (await store.counters())["Bash(git push:*)"]["granted"] == 2


async def test_changes_stream_in_order(store: ApprovalStore) -> None:
    seen: list[Change] = []
    done = anyio.Event()

    async def read() -> None:
        async for change in store.changes("0"):
            seen.append(change)
            if change.kind == "grant_revoked":
                done.set()
                return

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            r = await store.submit(ask())
            d = await store.decide(r.id, "approve", approver="a", grant=GrantSpec())
            await store.revoke(d.grant_id, by="a")
            await done.wait()
    assert [c.kind for c in seen] == [
        "request_created",
        "request_decided",
        "grant_added",
        "grant_revoked",
    ]
    assert seen[1].request is not None
    assert seen[1].request.decided_by == "a"
    cursors = [c.cursor for c in seen]
    assert len(set(cursors)) == 4


def test_the_memory_store_serves_one_event_loop_after_another() -> None:
    store = MemoryApprovalStore()
    record = anyio.run(store.submit, ask())

    async def give_up_waiting() -> None:
        with anyio.move_on_after(0.05):
            await store.wait(record.id)

    async def wait_and_decide() -> str:
        with anyio.fail_after(LIMIT):
            return await waited_and_decided()

    async def waited_and_decided() -> str:
        async with anyio.create_task_group() as tg:
            tg.start_soon(store.wait, record.id)
            await anyio.wait_all_tasks_blocked()
            await store.decide(record.id, "approve", approver="alice")
        return (await store.get(record.id)).state

    anyio.run(give_up_waiting)  # a waiter of this loop is left behind
    assert anyio.run(wait_and_decide) == "approved"
